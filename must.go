package backoff

// Must returns v when err is nil and panics with err otherwise, for any
// constructor of the package called with constants, as regexp.MustCompile:
//
//	var budget = backoff.Must(backoff.NewBudget(backoff.BudgetConfig{}))
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

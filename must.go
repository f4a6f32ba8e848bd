package backoff

// Must returns v when err is nil and panics with err otherwise. It serves
// every constructor of the package, for values built from constants, in the
// manner of regexp.MustCompile:
//
//	var policy = backoff.Must(backoff.NewFullJitter(cfg, backoff.RuntimeRng{}))
//	var budget = backoff.Must(backoff.NewBudget(backoff.BudgetConfig{}))
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

package backoff

// BudgetError is the name loop_test.go and retryafter_test.go still use for
// the budget's refusal, now unexported; delete this file once they do not.
type BudgetError = budgetError

package backoff

import "testing"

// BenchmarkBudgetSerial: one goroutine, no contention.
func BenchmarkBudgetSerial(b *testing.B) {
	budget, err := NewBudget(BudgetConfig{Ratio: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deposit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			budget.Deposit()
		}
	})
	b.Run("withdraw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			budget.Deposit()
			if budget.Withdraw() != nil {
				b.Fatal("refused")
			}
		}
	})
	empty, _ := NewBudget(BudgetConfig{Reserve: 0.001, Burst: 1})
	empty.Withdraw()
	b.Run("refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if empty.Withdraw() == nil {
				b.Fatal("granted")
			}
		}
	})
}

package backoff

import "testing"

func TestMustPanicsWithTheError(t *testing.T) {
	_, want := NewExponential(Config{})
	defer func() {
		if got := recover(); got == nil || got.(error).Error() != want.Error() {
			t.Errorf("Must panicked with %v, want %v", got, want)
		}
	}()
	Must(NewExponential(Config{}))
}

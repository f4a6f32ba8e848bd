package backoff

import (
	"math/rand/v2"
	"testing"
)

func TestDecorrelatedSequenceProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	for range 2000 {
		base, cap := randomConfig(r)
		cfg := Config{Base: base, Cap: cap, MaxAttempts: Unlimited}
		seq := Must(NewDecorrelated(cfg, NewSeededRng(r.Uint64()))).NewSequence()
		prev := base
		for attempt := 1; attempt <= 50; attempt++ {
			d, stop := seq.NextDelay(attempt, errTransient)
			ok := stop == nil
			hi := min(cap, saturatingTriple(prev))
			if !ok || d < base || d > hi {
				t.Fatalf("%+v attempt %d: got %d, want [%d, %d] (prev %d)", cfg, attempt, d, base, hi, prev)
			}
			prev = d
		}
	}
}

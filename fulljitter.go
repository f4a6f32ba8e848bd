package backoff

import (
	"math/bits"
	"time"
)

// FullJitter is exponential backoff with full jitter, the recommended
// default: after attempt n it waits a uniformly random duration in [0, c],
// both ends reachable, where c = min(Cap, Base·2^(n−1)). Giving up draws
// nothing. A FullJitter is immutable and safe for concurrent use when its
// Rng is.
type FullJitter struct {
	cfg Config
	rng Rng
}

// NewFullJitter returns a FullJitter policy drawing from rng, or a
// *[ParamError] when cfg is invalid or rng is nil.
func NewFullJitter(cfg Config, rng Rng) (*FullJitter, error) {
	if err := cfg.validateWithRng(rng); err != nil {
		return nil, err
	}
	return &FullJitter{cfg: cfg, rng: rng}, nil
}

// NextDelay returns [ErrPermanent] when err is not [Retryable], then
// [ErrExhausted] when attempt >= MaxAttempts, and otherwise a delay drawn
// uniformly from [0, min(Cap, Base·2^(attempt−1))].
func (p *FullJitter) NextDelay(attempt int, err error) (time.Duration, error) {
	if !p.cfg.surelyRetries(attempt, err) {
		if reason := p.cfg.stop(attempt, err); reason != nil {
			return 0, reason
		}
	}
	c := ceiling(p.cfg.Base, p.cfg.Cap, attempt)
	if _, ok := p.rng.(RuntimeRng); ok {
		// uniform's RuntimeRng path, written out: no call but the draw's.
		bound := uint64(c) + 1
		v, low := bits.Mul64(runtimeRand(), bound)
		if low < bound { // "<=" is equivalent, as in uniform
			v = lemireReject(bound, v, low, runtimeRand)
		}
		return time.Duration(v), nil
	}
	return time.Duration(uniform(p.rng, 0, int64(c))), nil
}

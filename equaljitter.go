package backoff

import "time"

// EqualJitter keeps half of the exponential delay fixed and draws the other
// half: after attempt n, with c = min(Cap, Base·2^(n−1)), it waits a
// uniformly random duration in [c − ⌊c/2⌋, c]. Both ends are reachable, the
// delay is never below half the ceiling, and the mean is about 3c/4.
//
// Choose it when a client must keep most of the backoff duration (a server
// that needs real time to recover) but should still not retry in lockstep.
// It is not a safer default: on contended work it finishes later than
// [FullJitter] (measured in docs/simulations.md).
//
// Like FullJitter it checks retryability, then the attempt budget, and only
// then draws, so giving up consumes no randomness. It draws exactly once per
// retry, also when the drawn half is empty (c = 1ns).
//
// An EqualJitter is immutable; it is safe for concurrent use when its Rng is.
type EqualJitter struct {
	cfg Config
	rng Rng
}

// NewEqualJitter returns an EqualJitter policy drawing from rng, or a
// *[ParamError] when cfg is invalid or rng is nil.
func NewEqualJitter(cfg Config, rng Rng) (*EqualJitter, error) {
	if err := cfg.validateWithRng(rng); err != nil {
		return nil, err
	}
	return &EqualJitter{cfg: cfg, rng: rng}, nil
}

// NextDelay returns [ErrPermanent] when err is not [Retryable], then
// [ErrExhausted] when attempt >= MaxAttempts, and otherwise a delay drawn
// uniformly from [c − ⌊c/2⌋, c] with
// c = min(Cap, Base·2^(attempt−1)).
func (p *EqualJitter) NextDelay(attempt int, err error) (time.Duration, error) {
	if reason := p.cfg.stop(attempt, err); reason != nil {
		return 0, reason
	}
	c := int64(ceiling(p.cfg.Base, p.cfg.Cap, attempt))
	return time.Duration(uniform(p.rng, c-c/2, c)), nil
}

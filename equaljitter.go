package backoff

import "time"

// EqualJitter keeps half of the exponential delay fixed and draws the other
// half: after attempt n, with c = min(Cap, Base·2^(n−1)), it waits a
// uniformly random duration in [c − ⌊c/2⌋, c], both ends reachable. It
// draws once per retry, also when the drawn half is empty (c = 1ns), and
// nothing when it gives up. An EqualJitter is immutable and safe for
// concurrent use when its Rng is.
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
	if !p.cfg.surelyRetries(attempt, err) {
		if reason := p.cfg.stop(attempt, err); reason != nil {
			return 0, reason
		}
	}
	c := int64(ceiling(p.cfg.Base, p.cfg.Cap, attempt))
	return time.Duration(uniform(p.rng, c-c/2, c)), nil
}

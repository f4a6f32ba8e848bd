package backoff

import (
	"math"
	"time"
)

// Decorrelated is decorrelated jitter (Brooker, 2015): within one retry
// sequence each delay is drawn from the previous one,
//
//	sleep = min(Cap, uniform[Base, 3·prev]),   prev starting at Base,
//
// growing about 1.5× per retry on average. Every delay lies in [Base, Cap]:
// a draw above Cap is clamped, and 3·prev saturates. prev belongs to one
// retry sequence ([Sequencer]), so a *Decorrelated is immutable and safe for
// concurrent use when its Rng is.
type Decorrelated struct {
	cfg Config
	rng Rng
}

// NewDecorrelated returns a Decorrelated policy drawing from rng, or a
// *[ParamError] when cfg is invalid or rng is nil.
func NewDecorrelated(cfg Config, rng Rng) (*Decorrelated, error) {
	if err := cfg.validateWithRng(rng); err != nil {
		return nil, err
	}
	return &Decorrelated{cfg: cfg, rng: rng}, nil
}

// NextDelay returns [ErrPermanent] when err is not [Retryable], then
// [ErrExhausted] when attempt >= MaxAttempts, and otherwise
// min(Cap, uniform[Base, 3·Base]): the first step of a
// new sequence. Use NewSequence for a growing sequence.
func (p *Decorrelated) NextDelay(attempt int, err error) (time.Duration, error) {
	return p.next(p.cfg.Base, attempt, err)
}

// NewSequence returns a Policy holding the memory of one retry sequence,
// starting from prev = Base. The result is for one goroutine; it is not
// safe for concurrent use.
func (p *Decorrelated) NewSequence() Policy {
	return &decorrelatedSequence{policy: p, prev: p.cfg.Base}
}

func (p *Decorrelated) next(prev time.Duration, attempt int, err error) (time.Duration, error) {
	if !p.cfg.surelyRetries(attempt, err) {
		if reason := p.cfg.stop(attempt, err); reason != nil {
			return 0, reason
		}
	}
	hi := int64(math.MaxInt64)
	if prev <= math.MaxInt64/3 {
		hi = 3 * int64(prev)
	}
	d := time.Duration(uniform(p.rng, int64(p.cfg.Base), hi))
	return min(d, p.cfg.Cap), nil
}

// decorrelatedSequence is one retry sequence of a Decorrelated policy.
type decorrelatedSequence struct {
	policy *Decorrelated
	prev   time.Duration
}

func (s *decorrelatedSequence) NextDelay(attempt int, err error) (time.Duration, error) {
	d, reason := s.policy.next(s.prev, attempt, err)
	if reason == nil {
		s.prev = d
	}
	return d, reason
}

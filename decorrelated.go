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
// so delays grow by about 1.5× per retry on average without following a
// fixed schedule. Every delay lies in [Base, Cap]; 3·prev saturates instead
// of overflowing. Its measured trade-off against [FullJitter] (sooner on
// contended work at small fleets, more calls) is in docs/simulations.md.
//
// The draw is clamped, not reflected: once prev is at Cap, about two thirds
// of the draws exceed Cap and land exactly on it
// (P = (3·Cap − Cap)/(3·Cap − Base) ≈ 2/3). That does not re-synchronise a
// fleet at the cap, as was long feared: a delay of exactly Cap keeps each
// client's phase rather than moving it towards another's, and the other
// draws keep spreading the phases. The simulator's recovery workload
// measures a fleet at the cap as evenly spread as under full jitter
// (docs/simulations.md).
//
// The memory of prev belongs to one retry sequence, never to the shared
// policy: Decorrelated is a [Sequencer], and [Do] (like the sim package)
// calls NewSequence once per call. The *Decorrelated itself is immutable and
// safe for concurrent use when its Rng is; called directly, without a
// sequence, its NextDelay answers as the first step of a fresh sequence
// (prev = Base) every time.
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
// new sequence. Use NewSequence, or [StartSequence], for a growing sequence.
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
	if reason := p.cfg.stop(attempt, err); reason != nil {
		return 0, reason
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

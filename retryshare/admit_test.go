package retryshare

import (
	"testing"
	"time"
)

// TestAdmitEdges: Admit refuses a retry exactly when the route's window is
// over by its retries (X ≥ MinRetries and X/max(R, X) > Threshold) and so
// are both of the caller's slots (X ≥ MinRetries and significantly over
// Threshold: P(Binomial(R, Threshold) ≥ X) ≤ Threshold); with Callers 1,
// the one slot counts what the route does. At 0.1, 2 of 10 are not
// significant (0.26), 3 of 10 are (0.070).
func TestAdmitEdges(t *testing.T) {
	for _, tt := range []struct {
		name           string
		cfg            Config
		first, retries int
		want           bool
	}{
		{"a share of exactly Threshold", Config{Callers: 1}, 180, 20, true},
		{"over, not significantly", Config{Callers: 1}, 180, 21, true},
		{"over significantly", Config{Callers: 1}, 180, 40, false},
		{"2 of 10: not significant", Config{Callers: 1}, 8, 2, true},
		{"3 of 10: significant", Config{Callers: 1}, 7, 3, false},
		{"one retry short of MinRetries", Config{Callers: 1}, 0, 1, true},
		{"MinRetries retries of as many requests", Config{Callers: 1}, 0, 2, false},
		{"Threshold 1 never over", Config{Callers: 1, Threshold: 1, MinRetries: 1}, 0, 1000, true},
		{"Threshold 0.5, MinRetries 1", Config{Callers: 1, Threshold: 0.5, MinRetries: 1}, 1, 2, false},
		{"Threshold 0.5, half", Config{Callers: 1, Threshold: 0.5, MinRetries: 1}, 2, 2, true},
	} {
		if got := recorded(t, tt.cfg, "c", tt.first, tt.retries).Admit("/api", "c"); got != tt.want {
			t.Errorf("%s: %d first tries, %d retries: Admit = %v, want %v", tt.name, tt.first, tt.retries, got, tt.want)
		}
	}
}

// TestAdmitRouteMinimum: a route with fewer than MinRetries retries is not
// over, whatever its share, though the caller's slots are over by the
// retries of another route.
func TestAdmitRouteMinimum(t *testing.T) {
	for retries, want := range []bool{true, true, false} {
		s := newShare(t, Config{Callers: 1}, new(manualClock))
		for range 30 {
			s.Record("/b", "c", true)
		}
		for range retries {
			s.Record("/a", "c", true)
		}
		if got := s.Admit("/a", "c"); got != want {
			t.Errorf("%d retries of %d requests on /a, MinRetries 2: Admit = %v, want %v", retries, retries, got, want)
		}
	}
}

// TestAdmitLiar: a caller that says every request is a retry has its
// retries refused; honest callers of other slots have theirs served, on
// the same route, while it is over by the liar's retries.
func TestAdmitLiar(t *testing.T) {
	s := newShare(t, Config{}, new(manualClock))
	honest, liar := recordLiar(t, s)
	s.Record("/api", honest[0], true) // an honest retry
	if s.Admit("/api", liar) {
		t.Error("the liar's retry admitted")
	}
	for _, h := range honest {
		if !s.Admit("/api", h) {
			t.Errorf("honest caller %s's retry refused", h)
		}
	}
	if !s.Admit("/other", liar) {
		t.Error("the liar's retry on a route that is not over refused")
	}
}

// TestAdmitWindow: Admit counts a retry it refuses, as a retry of the
// route and a request and a retry of the caller's slots, nothing for one
// it admits, and refuses only while the retries are in the window: from
// Window after the last one, a retry is served again.
func TestAdmitWindow(t *testing.T) {
	c := new(manualClock)
	s := newShare(t, Config{Callers: 1}, c)
	if !s.Admit("/new", "c") || s.find("/new") != nil {
		t.Fatal("a retry of a route never recorded refused, or the route given a window")
	}
	for range 30 {
		s.Record("/api", "c", true)
	}
	for range 100 {
		if s.Admit("/api", "c") {
			t.Fatal("a retry of a route over by its retries admitted")
		}
	}
	a, _ := s.slotsOf("c")
	for i, w := range []*window{s.route("/api"), a} {
		if r, x, f := w.counts(s.observe()); r != []uint64{30, 130}[i] || x != 130 || f != 0 {
			t.Errorf("after 100 refusals, window %d (route, slot) counts %d requests, %d retries, %d failing answers; want %d, 130, 0", i, r, x, f, []uint64{30, 130}[i])
		}
	}
	c.advance(9 * time.Second) // 9 buckets: still counted
	if s.Admit("/api", "c") {
		t.Error("admitted 9 s after the retries, within the window")
	}
	c.advance(time.Second)
	if !s.Admit("/api", "c") {
		t.Error("refused a Window after the retries")
	}
}

// TestAdmitRest: routes past MaxRoutes share one window, for Admit as for
// Record.
func TestAdmitRest(t *testing.T) {
	s := newShare(t, Config{MaxRoutes: 1, Callers: 1}, new(manualClock))
	s.Record("/a", "c", false)
	for range 30 {
		s.Record("/b", "c", true)
	}
	if s.Admit("/c", "c") || !s.Admit("/a", "c") {
		t.Error("want /c refused by the rest's window (where /b's retries count), /a admitted")
	}
}

// recorded returns a Share of cfg on a manual clock with first first tries,
// then retries retries, of route "/api" from caller.
func recorded(t *testing.T, cfg Config, caller string, first, retries int) *Share {
	t.Helper()
	s := newShare(t, cfg, new(manualClock))
	for i := range first + retries {
		s.Record("/api", caller, i >= first)
	}
	return s
}

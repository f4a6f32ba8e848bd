package retryshare

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// refuses answers n failing answers of route from caller, each after
// recording its request (a first attempt), and returns how many Refuse
// let be retried.
func refuses(s *Share, route, caller string, n int) (invited int) {
	for range n {
		s.Record(route, caller, false)
		if !s.Refuse(route, caller) {
			invited++
		}
	}
	return invited
}

// TestRefuseBurst: failing answers sent in one instant, none of their
// retries arrived yet, are let be retried for at most Threshold of the
// requests plus Burst, or as many as are not significantly more than
// Threshold of them: whether the requests are all recorded first or each
// just before its answer, from one caller or from a caller each.
func TestRefuseBurst(t *testing.T) {
	for _, cfg := range []Config{{}, {Threshold: 0.2, Burst: 10}, {Threshold: 0.05, Burst: 1}} {
		for _, first := range []bool{false, true} {
			for _, callers := range []int{1, 500} {
				s := newShare(t, cfg, new(manualClock))
				cfg := s.config()
				caller := func(i int) string { return fmt.Sprint("caller ", i%callers) }
				invited := 0
				if first {
					for i := range 500 {
						s.Record("/fail", caller(i), false)
					}
				}
				for i := range 500 {
					if !first {
						s.Record("/fail", caller(i), false)
					}
					if !s.Refuse("/fail", caller(i)) {
						invited++
					}
				}
				// What is not significant is let be retried whatever the
				// allowance: when the requests come first, up to the most
				// failing answers of 500 that are not (59 at 0.1).
				notSignificant := 0
				for !significant(notSignificant+1, 500, cfg.Threshold) {
					notSignificant++
				}
				limit := max(cfg.Threshold*500+float64(cfg.Burst), float64(notSignificant))
				if float64(invited) > limit || float64(invited) < cfg.Threshold*500-1 {
					t.Errorf("Threshold %v, Burst %d, recorded first %v, %d callers: %d of 500 failing answers let be retried; want about %v, at most %v",
						cfg.Threshold, cfg.Burst, first, callers, invited, cfg.Threshold*500, limit)
				}
			}
		}
	}
}

// config returns the parameters of s, defaults filled in.
func (s *Share) config() Config {
	return Config{Threshold: s.threshold, MinRetries: int(s.min), Burst: int(s.maxDebt / unit), MaxRoutes: s.routes.Max, Callers: int(s.callers)}
}

// TestRefuseLiar: a caller that says every request is a retry makes the
// route over by its retries; only its own failing answers are refused, and
// the honest callers' are let be retried as long as the route is not over
// by its answers.
func TestRefuseLiar(t *testing.T) {
	s := newShare(t, Config{}, new(manualClock))
	honest, liar := recordLiar(t, s)
	for i := range 3 { // 3 failing answers to each: 3 invitations of 400 requests
		for _, h := range honest {
			if s.Refuse("/api", h) {
				t.Errorf("failing answer %d to honest caller %s refused", i, h)
			}
		}
		if !s.Refuse("/api", liar) {
			t.Errorf("failing answer %d to the liar not refused", i)
		}
	}
	// Honest callers that retry more than Threshold of their requests are
	// refused too, once the route is over by its retries.
	for _, h := range honest[:1] {
		for range 20 {
			s.Record("/api", h, true)
		}
	}
	if !s.Refuse("/api", honest[0]) || s.Refuse("/api", honest[1]) {
		t.Error("a caller of 20 retries in 120 requests not refused, or another caller refused")
	}
	// A route over by its answers refuses every caller.
	s.fail("/api", 100)
	s.spend("/api")
	for _, h := range honest {
		if !s.Refuse("/api", h) {
			t.Errorf("route over by its answers: honest caller %s not refused", h)
		}
	}
}

// recordLiar records on route /api of s 100 requests of each of three
// honest callers and 100 forged retries of a liar of slots of its own (25 %
// of the requests), and returns the callers: the route is over by its
// retries.
func recordLiar(t *testing.T, s *Share) (honest []string, liar string) {
	t.Helper()
	honest, liar = []string{"10.0.0.1:1000", "10.0.0.2:1000", "10.0.0.3:1000"}, "10.0.0.9:666"
	if !distinctSlots(s, liar, honest...) {
		t.Fatal("the liar shares a slot with an honest caller: choose other keys")
	}
	for range 100 {
		for _, h := range honest {
			s.Record("/api", h, false)
		}
		s.Record("/api", liar, true)
	}
	if !s.overByRetries("/api") {
		t.Fatal("the route is not over by its retries")
	}
	return honest, liar
}

// distinctSlots reports whether no slot of caller is one of others'.
func distinctSlots(s *Share, caller string, others ...string) bool {
	a, b := s.slotsOf(caller)
	for _, o := range others {
		c, d := s.slotsOf(o)
		if a == c || a == d || b == c || b == d {
			return false
		}
	}
	return true
}

// TestRefuseCallerSlots: a caller that shares one of its two slots with a
// liar is not refused; one that shares both is. With Callers 1, every
// caller shares the one slot.
func TestRefuseCallerSlots(t *testing.T) {
	s := newShare(t, Config{Callers: 4}, new(manualClock))
	// Find, among generated keys, a liar, a caller sharing one slot with
	// it, and one sharing both.
	const liar = "liar"
	la, lb := s.slotsOf(liar)
	if la == lb {
		t.Fatal("two slots of 4 are the same slot")
	}
	var one, both string
	for i := 0; one == "" || both == ""; i++ {
		k := fmt.Sprint("caller ", i)
		a, b := s.slotsOf(k)
		switch n := btoi(a == la || a == lb) + btoi(b == la || b == lb); {
		case n == 1 && one == "":
			one = k
		case n == 2 && both == "":
			both = k
		}
	}
	for range 20 {
		s.Record("/api", one, false)
		s.Record("/api", both, false)
		s.Record("/api", liar, true)
	}
	if !s.Refuse("/api", liar) || s.Refuse("/api", one) || !s.Refuse("/api", both) {
		t.Error("want the liar and the caller of both its slots refused, and the caller of one of them not")
	}

	s = newShare(t, Config{Callers: 1}, new(manualClock))
	if a, b := s.slotsOf("x"); a != b || a != s.slot(0) {
		t.Error("with Callers 1, a caller's slots are not the one slot")
	}
	s.Record("/api", "x", true) // counted once in the one slot
	if req, _, _ := s.slot(0).counts(s.observe()); req != 1 {
		t.Errorf("the one slot counts %d requests, want 1", req)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSlotsSpread: caller keys spread over the slots, two distinct ones
// each, the same in every Share.
func TestSlotsSpread(t *testing.T) {
	const slots, keys = 64, 64000
	s := newShare(t, Config{Callers: slots}, new(manualClock))
	other := newShare(t, Config{Callers: slots}, new(manualClock))
	hits := map[*window]int{}
	for i := range keys {
		k := fmt.Sprintf("10.%d.%d.%d:%d", i>>16&255, i>>8&255, i&255, 30000+i%1000)
		a, b := s.slotsOf(k)
		if a == b {
			t.Fatalf("%s: both slots the same", k)
		}
		hits[a]++
		hits[b]++
		h := hash(k)
		if oh := hash(k); oh != h {
			t.Fatalf("%s: hash not stable", k)
		}
		oa, ob := other.slotsOf(k)
		if index(other, oa) != index(s, a) || index(other, ob) != index(s, b) {
			t.Fatalf("%s: other slots in another Share", k)
		}
	}
	for w, n := range hits {
		if want := 2 * keys / slots; n < want*8/10 || n > want*12/10 {
			t.Errorf("slot %d holds %d keys, want about %d", index(s, w), n, want)
		}
	}
	if len(hits) != slots {
		t.Errorf("%d slots used, want %d", len(hits), slots)
	}
}

// index returns the index of slot w of s.
func index(s *Share, w *window) int {
	for i := range s.callers {
		if s.slot(i) == w {
			return int(i)
		}
	}
	return -1
}

// TestRefuseRoutes: a failing route beside a busy healthy one is over by
// itself, and the healthy one is not over by the failing one's answers.
func TestRefuseRoutes(t *testing.T) {
	s := newShare(t, Config{}, new(manualClock))
	invited := 0
	for range 100 {
		for range 100 {
			s.Record("/ok", "c", false)
		}
		s.Record("/fail", "c", false)
		if !s.Refuse("/fail", "c") {
			invited++
		}
	}
	if invited > 14 {
		t.Errorf("%d of 100 failing answers of /fail let be retried, want at most 14 (Threshold of them, plus Burst)", invited)
	}
	if s.Refuse("/ok", "c") {
		t.Error("a failing answer of the healthy route refused")
	}
}

// TestRouteCap: the first MaxRoutes routes have a window of their own; the
// others share one, "" a route like any other.
func TestRouteCap(t *testing.T) {
	s := newShare(t, Config{MaxRoutes: 2, MinRetries: 1}, new(manualClock))
	for _, r := range []string{"", "/a", "/b", "/c"} {
		s.Record(r, "c", false)
	}
	if s.route("") == s.route("/a") || s.route("/a") == s.route("/b") || s.route("/b") != s.route("/c") || s.route("/b") != s.routes.Shared() {
		t.Fatal(`want windows of their own for "" and /a, and /b and /c sharing the rest`)
	}
	if n := s.routes.Len(); n != 2 {
		t.Errorf("%d routes kept, want 2", n)
	}
	// Retries on /b make /c over, not /a.
	for range 5 {
		s.Record("/b", "c", true)
	}
	if !s.overByRetries("/c") || s.overByRetries("/a") {
		t.Error("retries of /b: want /c over (the rest's window), /a not")
	}
	// /b fails and spends the allowance of the rest: /c's failing answer is
	// refused (2 failing answers of 2 requests, significant at 0.1), /a's,
	// with a window and an allowance of its own, not.
	s = newShare(t, Config{MaxRoutes: 2}, new(manualClock))
	for _, r := range []string{"", "/a", "/b", "/c"} {
		s.Record(r, "c", false)
	}
	s.fail("/b", 1)
	s.spend("/b")
	if !s.Refuse("/c", "c") || s.Refuse("/a", "c") {
		t.Error("the allowance of /b spent: want /c refused (the rest's allowance), /a not")
	}
	// Concurrent first uses of many routes keep the cap and give every
	// route one window.
	s = newShare(t, Config{MaxRoutes: 50}, new(manualClock))
	var wg sync.WaitGroup
	seen := make([]map[string]*window, 8)
	for g := range seen {
		seen[g] = map[string]*window{}
		wg.Go(func() {
			for i := range 200 {
				r := fmt.Sprint("/r", (i*7+g)%100)
				s.Record(r, "c", false)
				seen[g][r] = s.route(r)
			}
		})
	}
	wg.Wait()
	if n := s.routes.Len(); n != 50 {
		t.Errorf("%d routes kept, want 50", n)
	}
	for _, m := range seen {
		for r, w := range m {
			if s.route(r) != w {
				t.Errorf("route %s had two windows", r)
			}
		}
	}
}

// TestRouteWindowUnused: a route's window that goes unused while the clock
// moves on 2³² buckets or more (other routes moving the Share's time) reads
// nothing of its old counts when used again.
func TestRouteWindowUnused(t *testing.T) {
	const bucket = time.Millisecond
	for _, jump := range []int64{1 << 32, 1<<32 + 3, 1<<31 + 5, 3 << 32} {
		c := new(manualClock)
		s := newShare(t, Config{Window: 10 * bucket, MinRetries: 1}, c)
		for range 10 {
			s.Record("/idle", "c", true)
		}
		for i := int64(1); i <= 4; i++ {
			c.set(time.Duration(jump*i/4) * bucket)
			s.Record("/busy", "d", false)
		}
		s.Record("/idle", "c", false)
		if s.overByRetries("/idle") || s.Refuse("/idle", "c") {
			t.Errorf("jump of %d buckets: the idle route's old retries read as current", jump)
		}
	}
}

// TestRefuseConcurrent: concurrent Records and Refuses of a burst let be
// retried Threshold of the requests plus Burst at most (the allowance is
// one word), and every failing answer is counted.
func TestRefuseConcurrent(t *testing.T) {
	const goroutines, each = 8, 500
	s := newShare(t, Config{}, new(manualClock))
	var wg sync.WaitGroup
	invited := make([]int, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			invited[g] = refuses(s, "/fail", fmt.Sprint("caller ", g), each)
		})
	}
	wg.Wait()
	n := 0
	for _, k := range invited {
		n += k
	}
	if limit := goroutines*each/10 + 4; n > limit || n < goroutines*each/10-1 {
		t.Errorf("%d of %d failing answers let be retried, want about %d, at most %d", n, goroutines*each, goroutines*each/10, limit)
	}
	if _, _, f := s.route("/fail").counts(s.observe()); f != goroutines*each {
		t.Errorf("%d failing answers counted, want %d", f, goroutines*each)
	}
}

// TestRefuseCallerSignificant: over by its retries alone, a route refuses
// a caller's failing answer only when both of its slots hold at least
// MinRetries retries, significantly more than Threshold of their requests
// (with Callers 1, the route's own counts): 2 of 10 at 0.1 are not (0.26),
// 3 of 10 are (0.070); at 0.3, 4 of 10 are not (0.35), 5 of 10 are (0.15);
// at Threshold 1 never.
func TestRefuseCallerSignificant(t *testing.T) {
	for _, tt := range []struct {
		cfg            Config
		first, retries int
		want           bool
	}{
		{Config{Callers: 1}, 8, 2, false},
		{Config{Callers: 1}, 7, 3, true},
		{Config{Callers: 1}, 0, 1, false},
		{Config{Callers: 1}, 0, 2, true},
		{Config{Callers: 1, Threshold: 0.3, MinRetries: 3}, 6, 4, false},
		{Config{Callers: 1, Threshold: 0.3, MinRetries: 3}, 5, 5, true},
		{Config{Callers: 1, Threshold: 0.3, MinRetries: 3}, 0, 2, false},
		{Config{Callers: 1, Threshold: 1, MinRetries: 1}, 0, 50, false},
	} {
		if got := recorded(t, tt.cfg, "liar", tt.first, tt.retries).Refuse("/api", "liar"); got != tt.want {
			t.Errorf("%+v, %d retries of %d requests: Refuse = %v, want %v", tt.cfg, tt.retries, tt.first+tt.retries, got, tt.want)
		}
	}
}

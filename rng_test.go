package backoff

import (
	"math"
	"testing"
	"time"
)

func TestSeededRngIsReproducible(t *testing.T) {
	a, b := NewSeededRng(42), NewSeededRng(42)
	c := NewSeededRng(43)
	same, differ := true, false
	for range 100 {
		x, y, z := a.Int64N(1<<40), b.Int64N(1<<40), c.Int64N(1<<40)
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed same stream: %v; other seed differs: %v", same, differ)
	}
}

// TestRuntimeRngIsUniform checks the runtime source's own mapping onto
// [0, n): in range for bounds where rejection is common, and uniform over a
// small bound. The source cannot be seeded, so the χ² threshold is set at
// P = 10⁻⁶ (9 degrees of freedom) to keep the test from flaking.
func TestRuntimeRngIsUniform(t *testing.T) {
	var rng RuntimeRng
	for _, n := range []int64{1, 2, 3, 1<<62 + 1, math.MaxInt64} {
		upper := 0
		for range 20000 {
			v := rng.Int64N(n)
			if v < 0 || v >= n {
				t.Fatalf("Int64N(%d) = %d out of range", n, v)
			}
			if v >= n/2 {
				upper++
			}
		}
		// For large n the upper half is drawn half the time; 20000 draws
		// put 5 standard deviations at ±354.
		if n > 1<<40 && (upper < 10000-354 || upper > 10000+354) {
			t.Errorf("Int64N(%d): %d of 20000 draws in the upper half", n, upper)
		}
	}
	counts := make([]int, 10)
	for range 200000 {
		counts[rng.Int64N(10)]++
	}
	if x := chiSquare(counts, 200000); x > 45.0 {
		t.Errorf("RuntimeRng.Int64N(10): χ² = %.2f > 45.0, counts %v", x, counts)
	}
}

// TestRuntimeRngRejection draws where Lemire's method rejects often (a
// bound near 2⁶³ rejects about 3 draws in 8), through the policies' inlined
// path, and checks the bounds.
func TestRuntimeRngRejection(t *testing.T) {
	c := time.Duration(3 << 61)
	p := Must(NewFullJitter(Config{Base: c, Cap: c, MaxAttempts: Unlimited}, RuntimeRng{}))
	var high int
	for range 1000 {
		d, err := p.NextDelay(1, nil)
		if err != nil || d < 0 || d > c {
			t.Fatalf("NextDelay = %v, %v; want [0, %v]", d, err, c)
		}
		if d > c/2 {
			high++
		}
	}
	if high < 400 || high > 600 {
		t.Errorf("%d of 1000 draws above c/2, want about 500", high)
	}
}

// TestLemireReject drives the rejection step with chosen draws: for bound 3,
// 2⁶⁴ mod 3 = 1 low product must be rejected (lo = 0), and the next draw
// decides.
func TestLemireReject(t *testing.T) {
	draws := []uint64{0, 1 << 63}
	next := func() uint64 { d := draws[0]; draws = draws[1:]; return d }
	// The first product, 0·3, has lo = 0 < 1: rejected; 2⁶³·3 = 1·2⁶⁴ + 2⁶³.
	if got := lemireReject(3, 0, 0, next); got != 1 || len(draws) != 0 {
		t.Errorf("lemireReject = %d with %d draws left, want 1 after drawing both", got, len(draws))
	}
	// lo = 1 is not below the threshold: the first product stands.
	if got := lemireReject(3, 2, 1, func() uint64 { t.Fatal("drew again"); return 0 }); got != 2 {
		t.Errorf("lemireReject kept %d, want 2", got)
	}
}

// TestLemireRejectionUnbiased checks that draws from a bound where Lemire's
// method must reject often are uniform, for RuntimeRng.Int64N (uniform's
// path) and for the copy written out in FullJitter.NextDelay (over
// [0, 3·2⁶¹−1]).
//
// For n = 3·2⁶¹, 2⁶⁴ mod n = 2⁶², so a quarter of the first products are
// rejected. Without the rejection the result is ⌊x·n/2⁶⁴⌋ for a uniform
// 64-bit x, and 2⁶⁴/n = 8/3: of every 8·2⁶¹ values of x, 3·2⁶¹, 3·2⁶¹ and
// 2·2⁶¹ land on results ≡ 0, 1, 2 (mod 3), so the residues come out with
// probabilities 3/8, 3/8, 2/8 instead of 1/3 each (the bias of issue 16
// §5, which the bounds of the tests above do not show). With
// N = 30000 draws that gives a χ² (2 degrees of freedom) of about
// 2 + N/32 ≈ 940, about 15 standard deviations above the threshold of 60.
// For a uniform draw P(χ² > 60) = e^(−30) ≈ 9·10⁻¹⁴ (2 degrees of freedom:
// P(χ² > x) = e^(−x/2)); with 10000 expected per cell the χ² law is
// accurate there, so the test does not flake, although RuntimeRng cannot
// be seeded.
func TestLemireRejectionUnbiased(t *testing.T) {
	const n, draws, limit = 3 << 61, 30000, 60.0
	fj := Must(NewFullJitter(Config{Base: n - 1, Cap: n - 1, MaxAttempts: Unlimited}, RuntimeRng{}))
	for _, tt := range []struct {
		name string
		draw func() int64
	}{
		{"RuntimeRng.Int64N(3<<61)", func() int64 { return RuntimeRng{}.Int64N(n) }},
		{"FullJitter over [0, 3<<61-1]", func() int64 {
			d, _ := fj.NextDelay(1, errTransient)
			return int64(d)
		}},
	} {
		counts := make([]int, 3)
		for range draws {
			v := tt.draw()
			if v < 0 || v >= n {
				t.Fatalf("%s: %d out of [0, %d)", tt.name, v, int64(n))
			}
			counts[v%3]++
		}
		if x := chiSquare(counts, draws); x > limit {
			t.Errorf("%s: residues mod 3 %v, χ² = %.1f > %.0f: rejection skipped?", tt.name, counts, x, limit)
		}
	}
}

// TestRuntimeRngReachesEveryDelay draws from the policies' RuntimeRng path
// (uniform's inlined draw, the one every README example takes) at small
// ceilings and checks that each delay stays in its documented range and
// that every value of the range occurs, both ends included: full jitter
// [0, c], equal jitter [c−⌊c/2⌋, c], decorrelated [Base, 3·Base] (Cap = 3·Base).
//
// A range holds k ≤ 17 values (decorrelated at Base 8), so a uniform draw
// misses a given value in 2000 draws with probability (1−1/k)²⁰⁰⁰ ≤
// (16/17)²⁰⁰⁰ < 10⁻⁵²; over the 60 values checked the test fails by chance
// with probability below 10⁻⁵⁰. It cannot flake, although RuntimeRng cannot
// be seeded.
func TestRuntimeRngReachesEveryDelay(t *testing.T) {
	const draws = 2000
	for _, c := range []time.Duration{1, 2, 3, 8} {
		for _, tt := range []struct {
			name   string
			p      Policy
			lo, hi time.Duration
		}{
			{"fulljitter", Must(NewFullJitter(Config{Base: c, Cap: c, MaxAttempts: Unlimited}, RuntimeRng{})), 0, c},
			{"equaljitter", Must(NewEqualJitter(Config{Base: c, Cap: c, MaxAttempts: Unlimited}, RuntimeRng{})), c - c/2, c},
			{"decorrelated", Must(NewDecorrelated(Config{Base: c, Cap: 3 * c, MaxAttempts: Unlimited}, RuntimeRng{})), c, 3 * c},
		} {
			seen := make(map[time.Duration]int)
			for range draws {
				d, err := tt.p.NextDelay(1, errTransient)
				if err != nil || d < tt.lo || d > tt.hi {
					t.Fatalf("%s c=%d: NextDelay = %d, %v; want a delay in [%d, %d]", tt.name, c, d, err, tt.lo, tt.hi)
				}
				seen[d]++
			}
			for d := tt.lo; d <= tt.hi; d++ {
				if seen[d] == 0 {
					t.Errorf("%s c=%d: %d never drawn in %d draws over [%d, %d] (counts %v)", tt.name, c, d, draws, tt.lo, tt.hi, seen)
				}
			}
		}
	}
}

package keyed

import (
	"strconv"
	"sync"
	"testing"
)

// TestGet: the first Max keys get a value each, the same one every time;
// the others, and every key when Max is 0 or less, share one.
func TestGet(t *testing.T) {
	for _, tc := range []struct {
		max  int
		keys []string // looked up in order
		own  int      // how many of them get their own value
	}{
		{0, []string{"a", "b"}, 0},
		{-1, []string{"a"}, 0},
		{1, []string{"a", "b", "c"}, 1},
		{2, []string{"", "a", "b"}, 2},
		{3, []string{"a", "b"}, 2},
	} {
		m := &Map[int]{Max: tc.max}
		if m.Len() != 0 {
			t.Fatalf("Max %d: Len() = %d before any Get, want 0", tc.max, m.Len())
		}
		seen := map[*int]string{}
		for i, k := range tc.keys {
			v := m.Get(k)
			if m.Get(k) != v {
				t.Fatalf("Max %d: Get(%q) gave two values", tc.max, k)
			}
			if own := v != m.Shared(); own != (i < tc.own) {
				t.Fatalf("Max %d: key %d (%q) has a value of its own: %v, want %v", tc.max, i, k, own, i < tc.own)
			}
			if other, ok := seen[v]; ok && v != m.Shared() {
				t.Fatalf("Max %d: %q and %q share a value", tc.max, k, other)
			}
			seen[v] = k
		}
		if m.Len() != tc.own {
			t.Fatalf("Max %d: Len() = %d, want %d", tc.max, m.Len(), tc.own)
		}
	}
}

// TestAddAgain: the slow path finds a key that another Get added since
// the fast path looked, and a table filled meanwhile.
func TestAddAgain(t *testing.T) {
	m := &Map[int]{Max: 1}
	a := m.Get("a")
	if m.add("a") != a || m.add("b") != m.Shared() || m.Len() != 1 {
		t.Fatal("add gave a second value for a key, or a value past Max")
	}
}

// TestGetConcurrent: concurrent first lookups of the same keys agree, and
// exactly Max keys get a value of their own (run with -race).
func TestGetConcurrent(t *testing.T) {
	const max, keys = 50, 80
	m := &Map[int]{Max: max}
	got := make([][keys]*int, 4)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for i := range keys {
				got[g][(i+g*17)%keys] = m.Get(strconv.Itoa((i + g*17) % keys))
			}
		})
	}
	wg.Wait()
	own := 0
	for i := range keys {
		for g := range got {
			if got[g][i] != got[0][i] {
				t.Fatalf("key %d: goroutines got different values", i)
			}
		}
		if got[0][i] != m.Shared() {
			own++
		}
	}
	if own != max || m.Len() != max {
		t.Fatalf("%d keys have a value of their own, Len() = %d; want %d", own, m.Len(), max)
	}
}

// TestGetAllocs: a seen key, and a key past Max, allocate nothing.
func TestGetAllocs(t *testing.T) {
	m := &Map[int]{Max: 1}
	m.Get("a")
	m.Get("b")
	if n := testing.AllocsPerRun(100, func() { m.Get("a"); m.Get("b") }); n != 0 {
		t.Fatalf("Get allocates %v times per run, want 0", n)
	}
}

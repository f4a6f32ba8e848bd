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
		seen := map[*int]string{}
		for i, k := range tc.keys {
			v := m.Get(k)
			if m.Get(k) != v {
				t.Fatalf("Max %d: Get(%q) gave two values", tc.max, k)
			}
			if own := v != &m.rest; own != (i < tc.own) {
				t.Fatalf("Max %d: key %d (%q) has a value of its own: %v, want %v", tc.max, i, k, own, i < tc.own)
			}
			if other, ok := seen[v]; ok && v != &m.rest {
				t.Fatalf("Max %d: %q and %q share a value", tc.max, k, other)
			}
			seen[v] = k
		}
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
		if got[0][i] != &m.rest {
			own++
		}
	}
	if own != max {
		t.Fatalf("%d keys have a value of their own, want %d", own, max)
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

package nilness

import "testing"

func TestIsNil(t *testing.T) {
	var (
		p  *int
		f  func()
		m  map[int]int
		c  chan int
		s  []int
		e  error
		pe = &e
	)
	one := 1
	for _, tt := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true},
		{"nil pointer", p, true},
		{"nil func", f, true},
		{"nil map", m, true},
		{"nil chan", c, true},
		{"nil slice", s, true},
		{"pointer", &one, false},
		{"func", func() {}, false},
		{"map", map[int]int{}, false},
		{"chan", make(chan int), false},
		{"slice", []int{}, false},
		{"pointer to nil interface", pe, false},
		{"int", 0, false},
		{"struct", struct{}{}, false},
	} {
		if got := IsNil(tt.v); got != tt.want {
			t.Errorf("%s: IsNil = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Package keyed maps string keys to values with bounded memory: the first
// Max keys looked up get a value each, and every later key shares one. It
// is the per-key table of packages retryshare (routes) and throttle
// (targets).
package keyed

import (
	"sync"
	"sync/atomic"
)

// Map gives each of its first Max keys a zero T of its own and every other
// key (every key, when Max is 0 or less) one shared T. Set Max before the
// first Get; a Map must not be copied once used.
//
// Get is safe for concurrent use. Once a key has been seen, or once Max
// keys have, Get takes no lock and does not allocate; a new key takes a
// lock and copies the table (O(Max) work, at most Max times).
type Map[T any] struct {
	Max int

	mu   sync.Mutex                    // held to add a key
	keys atomic.Pointer[map[string]*T] // never changed once stored
	rest T                             // the keys past Max
}

// Get returns the value of key: its own when it has one or there is room
// for it, the shared one otherwise. It returns the same pointer for the
// same key every time.
func (m *Map[T]) Get(key string) *T {
	if v := m.Find(key); v != nil {
		return v
	}
	return m.add(key)
}

// Find returns what Get would return for key without adding it: nil when
// key has no value yet and there is room for it. It takes no lock and does
// not allocate.
func (m *Map[T]) Find(key string) *T {
	if t := m.keys.Load(); t != nil {
		if v, ok := (*t)[key]; ok {
			return v
		}
		if len(*t) >= m.Max {
			return &m.rest
		}
	} else if m.Max <= 0 {
		return &m.rest
	}
	return nil
}

// add is Get's slow path, under the lock: another Get may have added key,
// or filled the table, since Get looked.
func (m *Map[T]) add(key string) *T {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old map[string]*T
	if t := m.keys.Load(); t != nil {
		old = *t
	}
	if v, ok := old[key]; ok {
		return v
	}
	if len(old) >= m.Max {
		return &m.rest
	}
	t := make(map[string]*T, len(old)+1)
	for k, v := range old {
		t[k] = v
	}
	v := new(T)
	t[key] = v
	m.keys.Store(&t)
	return v
}

// Len returns the number of keys that have a value of their own, at most
// Max.
func (m *Map[T]) Len() int {
	if t := m.keys.Load(); t != nil {
		return len(*t)
	}
	return 0
}

// Shared returns the value that the keys past Max share.
func (m *Map[T]) Shared() *T { return &m.rest }

// Package retrylog decides which failures of a retried operation are news.
//
// A reconcile that fails is retried with backoff for as long as it fails;
// logging every retry at error level buries every other line (and, with
// zap's production config, each comes with a stack trace). Both the spoke
// runtime and the hub's RGD controller log a failure at error level when it
// starts or when its message changes, and repeats at V(1); this package
// remembers, per key, the last failure logged.
package retrylog

import "sync"

// DefaultMaxKeys is Memory's bound when MaxKeys is 0.
const DefaultMaxKeys = 10000

// Memory remembers the last failure message per key. The zero value is
// ready to use; it is safe for concurrent use.
type Memory[K comparable] struct {
	// MaxKeys bounds the memory: past it everything is forgotten, and the
	// next failure of each key is news again. Defaults to DefaultMaxKeys.
	MaxKeys int

	mu   sync.Mutex
	last map[K]string
}

// Failed records msg as key's last failure and reports whether it is news:
// first is true (the caller knows the key had no failure pending), the key
// has no failure recorded, or msg differs from the last one.
func (m *Memory[K]) Failed(key K, msg string, first bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[K]string{}
	}
	last, seen := m.last[key]
	if !seen && len(m.last) >= m.maxKeys() {
		clear(m.last)
	}
	m.last[key] = msg
	return first || !seen || last != msg
}

// Succeeded forgets key's failure: its next failure is news.
func (m *Memory[K]) Succeeded(key K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, key)
}

func (m *Memory[K]) maxKeys() int {
	if m.MaxKeys > 0 {
		return m.MaxKeys
	}
	return DefaultMaxKeys
}

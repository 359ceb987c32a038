package sdk

import "sync"

// nameLocks serialises what is done to one graph name (registering,
// unregistering, removing), so that the graph served under a name is
// always the one registered last, while graphs of other names are
// registered at the same time: a slow compile delays only its own graph.
// What spans names (one graph per instance kind) is checked and recorded
// together under registry.mu, which is taken after a name's lock.
type nameLocks struct {
	mu    sync.Mutex
	locks map[string]*nameLock
}

type nameLock struct {
	mu    sync.Mutex
	users int // holders and waiters; the lock is dropped at zero
}

// lock locks name and returns its unlock.
func (l *nameLocks) lock(name string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*nameLock{}
	}
	nl := l.locks[name]
	if nl == nil {
		nl = &nameLock{}
		l.locks[name] = nl
	}
	nl.users++
	l.mu.Unlock()
	nl.mu.Lock()
	return func() {
		nl.mu.Unlock()
		l.mu.Lock()
		if nl.users--; nl.users == 0 {
			delete(l.locks, name)
		}
		l.mu.Unlock()
	}
}

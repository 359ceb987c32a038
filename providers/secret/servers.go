package secret

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// servers records which cluster name holds each API server, so that one
// server registered under two Secrets (two names) is engaged once: the
// first name to claim it holds it until its Secret goes or points elsewhere.
type servers struct {
	lock     sync.Mutex
	byServer map[string]multicluster.ClusterName
}

// serverIdentity names an API server by its URL (scheme and host, lower
// case, without a trailing slash) and the CA that vouches for it. Two URLs
// that reach one server by different names (an IP and a DNS name) are not
// recognised as the same.
func serverIdentity(rc *rest.Config) string {
	host := strings.ToLower(strings.TrimSuffix(rc.Host, "/"))
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return fmt.Sprintf("%s|%x", host, sha256.Sum256(rc.CAData))
}

// claim gives the server id to name unless another name holds it (then it
// returns that owner and false). A server name held before is released.
func (s *servers) claim(id string, name multicluster.ClusterName) (multicluster.ClusterName, bool) {
	s.lock.Lock()
	defer s.lock.Unlock()
	if owner, ok := s.byServer[id]; ok && owner != name {
		return owner, false
	}
	for other, n := range s.byServer {
		if n == name && other != id {
			delete(s.byServer, other)
		}
	}
	s.byServer[id] = name
	return name, true
}

// release frees the server name holds, if any.
func (s *servers) release(name multicluster.ClusterName) {
	s.lock.Lock()
	defer s.lock.Unlock()
	for id, n := range s.byServer {
		if n == name {
			delete(s.byServer, id)
		}
	}
}

// failures records why clusters are not engaged, for EngagementFailures.
type failures struct {
	lock   sync.Mutex
	byName map[multicluster.ClusterName]string
}

func (f *failures) set(name multicluster.ClusterName, why string) {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.byName[name] = why
}

func (f *failures) clear(name multicluster.ClusterName) {
	f.lock.Lock()
	defer f.lock.Unlock()
	delete(f.byName, name)
}

// EngagementFailures returns, per cluster name, why its Secret's cluster is
// not engaged: the reason (as on the Secret's Warning Event) and message,
// never credentials. A cluster engaged since, or whose Secret is gone, is
// not listed. It lets the hub show clusters that never joined in its fleet
// status (hub.EngagementReporter).
func (p *Provider) EngagementFailures() map[multicluster.ClusterName]string {
	p.failures.lock.Lock()
	defer p.failures.lock.Unlock()
	out := make(map[multicluster.ClusterName]string, len(p.failures.byName))
	for name, why := range p.failures.byName {
		out[name] = why
	}
	return out
}

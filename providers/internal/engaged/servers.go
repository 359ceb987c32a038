package engaged

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// servers records which cluster name holds each API server, so that one
// server described by two objects (two names) is engaged once: the first
// name to claim it holds it until its object goes or points elsewhere.
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

package engaged

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// One API server (same URL and CA) is held by one cluster name at a time;
// the name that holds it may move to another server, which frees it.
func TestOneServerIsClaimedByOneName(t *testing.T) {
	s := servers{byServer: map[string]multicluster.ClusterName{}}
	a := serverIdentity(&rest.Config{Host: "https://10.0.0.1:6443/", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}})
	same := serverIdentity(&rest.Config{Host: "HTTPS://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}})
	otherCA := serverIdentity(&rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("other")}})
	assert.Equal(t, a, same)
	assert.NotEqual(t, a, otherCA)

	_, ok := s.claim(a, "one")
	assert.True(t, ok)
	owner, ok := s.claim(same, "two")
	assert.False(t, ok)
	assert.EqualValues(t, "one", owner)

	_, ok = s.claim(otherCA, "one") // "one" moved elsewhere
	assert.True(t, ok)
	_, ok = s.claim(a, "two")
	assert.True(t, ok)
	s.release("two")
	_, ok = s.claim(a, "three")
	assert.True(t, ok)
}

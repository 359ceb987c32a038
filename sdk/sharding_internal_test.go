package sdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// TestTheCoordinatorGetsAConnectionOfItsOwn: client-go hands every client
// of one config the same cached transport (one HTTP/2 connection); the
// sharding client's config gets a transport of its own each time.
func TestTheCoordinatorGetsAConnectionOfItsOwn(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	shared1, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	shared2, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	require.Same(t, shared1, shared2, "client-go shares the transport of one config (what this guards against)")

	own, err := rest.TransportFor(ownConnection(cfg))
	require.NoError(t, err)
	assert.NotSame(t, shared1, own, "the sharding client does not share it")
	assert.Equal(t, cfg.Host, ownConnection(cfg).Host)
}

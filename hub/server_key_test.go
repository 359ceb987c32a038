package hub

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

// TestServerKey: clusters share a key only with the same server and
// identity; a config that routes or authenticates in ways it does not say
// gets none; the key keeps no credential; and asking again, as every
// Ensure does, answers the same from the cache.
func TestServerKey(t *testing.T) {
	cfg := &rest.Config{Host: "https://api.example:6443", BearerToken: "secret-token"}
	key, ok := serverKey(cfg)
	assert.True(t, ok)
	assert.NotContains(t, key, "secret-token")
	again, _ := serverKey(cfg)
	assert.Equal(t, key, again)

	same := rest.CopyConfig(cfg)
	same.Host = "HTTPS://api.example:6443/"
	sameKey, _ := serverKey(same)
	assert.Equal(t, key, sameKey, "one server, written differently")

	other := rest.CopyConfig(cfg)
	other.BearerToken = "another-token"
	otherKey, _ := serverKey(other)
	assert.NotEqual(t, key, otherKey, "another identity")

	custom := rest.CopyConfig(cfg)
	custom.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return rt }
	_, ok = serverKey(custom)
	assert.False(t, ok, "a custom transport may add its own identity")
	_, ok = serverKey(nil)
	assert.False(t, ok)
}

package clusterprofile

import (
	"bytes"
	"net/http"
	"sync"
	"time"
)

// credential is what a plugin gave for one profile: a token, a client
// certificate and key, or both, and when it expires (zero: never).
type credential struct {
	token     string
	cert, key []byte
	obtained  time.Time
	expires   time.Time
}

// renewAt is when the credential should be replaced: once four fifths of
// its life have passed. The zero time means never.
func (c *credential) renewAt() time.Time {
	if c.expires.IsZero() {
		return time.Time{}
	}
	return c.obtained.Add(c.expires.Sub(c.obtained) * 4 / 5)
}

// expired reports whether the credential is no longer valid at now.
func (c *credential) expired(now time.Time) bool {
	return !c.expires.IsZero() && !now.Before(c.expires)
}

// sameCertificate reports whether c and o carry the same client
// certificate and key (or none).
func (c *credential) sameCertificate(o *credential) bool {
	return bytes.Equal(c.cert, o.cert) && bytes.Equal(c.key, o.key)
}

// tokens holds the current token of one engaged profile. A renewed token
// replaces it in place: the cluster's clients use it from their next
// request on, without the cluster being engaged again.
type tokens struct {
	mu    sync.RWMutex
	token string
}

func (t *tokens) set(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.token = token
}

func (t *tokens) get() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.token
}

// wrap is a rest.Config's WrapTransport: every request carries the current
// token, unless it has an Authorization header already.
func (t *tokens) wrap(rt http.RoundTripper) http.RoundTripper {
	return &bearer{tokens: t, next: rt}
}

type bearer struct {
	tokens *tokens
	next   http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	token := b.tokens.get()
	if token == "" || req.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}

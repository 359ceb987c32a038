package testing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// A config from NoRateLimit makes REST clients without a token bucket, and
// leaves the config it copied limited.
func TestNoRateLimitMakesClientsWithoutALimiter(t *testing.T) {
	limited := &rest.Config{Host: "https://127.0.0.1:1", QPS: 500, Burst: 1000}
	restClient := func(cfg *rest.Config) *rest.RESTClient {
		cfg = rest.CopyConfig(cfg)
		cfg.GroupVersion = &corev1.SchemeGroupVersion
		cfg.APIPath = "/api"
		cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		c, err := rest.RESTClientFor(cfg)
		require.NoError(t, err)
		return c
	}
	assert.Nil(t, restClient(fgtesting.NoRateLimit(limited)).GetRateLimiter())
	require.NotNil(t, restClient(limited).GetRateLimiter())
	assert.InDelta(t, 500, restClient(limited).GetRateLimiter().QPS(), 0)
}

package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// servedCluster is a cluster of which only the config and HTTP client are
// used: what a probe needs.
type servedCluster struct {
	configCluster
	hc *http.Client
}

func (c servedCluster) GetHTTPClient() *http.Client { return c.hc }

// readyServer answers /readyz, counting the questions and how many are in
// flight at once; block, while open, holds each answer.
type readyServer struct {
	*httptest.Server
	asked, inFlight, mostInFlight atomic.Int32
	block                         chan struct{}
}

func newReadyServer(t *testing.T) *readyServer {
	s := &readyServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			most := s.mostInFlight.Load()
			if n <= most || s.mostInFlight.CompareAndSwap(most, n) {
				break
			}
		}
		s.asked.Add(1)
		if s.block != nil {
			select {
			case <-s.block:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

// cluster is the i-th cluster of the server, each with an identity of its
// own, so that no two share an answer.
func (s *readyServer) cluster(i int) servedCluster {
	return servedCluster{
		configCluster: configCluster{cfg: &rest.Config{Host: s.URL, BearerToken: fmt.Sprint("token-", i)}},
		hc:            s.Client(),
	}
}

func newTestProber(interval time.Duration) *Prober {
	return &Prober{
		opts:    ProberOptions{Interval: interval, Timeout: 5 * time.Second, Path: "/readyz", Logger: logr.Discard()},
		tracker: &tracker{},
	}
}

// Between two probes an engaged cluster holds no goroutine: ten thousand
// idle clusters must not park ten thousand goroutines and their stacks.
func TestAnIdleProbedClusterHoldsNoGoroutine(t *testing.T) {
	const clusters = 200
	s := newReadyServer(t)
	p := newTestProber(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()

	for i := range clusters {
		require.NoError(t, p.Engage(ctx, multicluster.ClusterName(fmt.Sprint("c", i)), s.cluster(i)))
	}
	require.Eventually(t, func() bool { return s.asked.Load() == clusters }, 10*time.Second, 5*time.Millisecond,
		"each cluster is probed once at once")
	require.Eventually(t, func() bool {
		s.Client().CloseIdleConnections()
		s.CloseClientConnections()
		return runtime.NumGoroutine() < before+clusters/10
	}, 10*time.Second, 10*time.Millisecond, "probing %d idle clusters holds no goroutine each", clusters)
}

// A cluster is probed again at the interval, never twice at once (a slow
// answer delays the next probe), and no more once its engagement ends.
func TestAClusterIsProbedOneAtATimeUntilItsEngagementEnds(t *testing.T) {
	s := newReadyServer(t)
	s.block = make(chan struct{})
	p := newTestProber(time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, p.Engage(ctx, "c", s.cluster(0)))

	require.Eventually(t, func() bool { return s.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)
	assert.Never(t, func() bool { return s.asked.Load() > 1 }, 100*time.Millisecond, 5*time.Millisecond,
		"no second probe while the first waits, whatever the interval")
	close(s.block)
	require.Eventually(t, func() bool { return s.asked.Load() >= 5 }, 5*time.Second, time.Millisecond,
		"probed again at the interval")
	assert.EqualValues(t, 1, s.mostInFlight.Load())

	cancel()
	require.Eventually(t, func() bool { return s.inFlight.Load() == 0 }, 5*time.Second, time.Millisecond)
	asked := s.asked.Load()
	assert.Never(t, func() bool { return s.asked.Load() > asked }, 100*time.Millisecond, 5*time.Millisecond,
		"no probe after the engagement ended")
}

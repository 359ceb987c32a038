package hub

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// configCluster is a cluster of which only the config is used.
type configCluster struct {
	cluster.Cluster
	cfg *rest.Config
}

func (c configCluster) GetConfig() *rest.Config { return c.cfg }

// Clusters of one server and identity probing at once share one answer,
// failures included; another identity asks on its own.
func TestProbesAreSharedByClustersOfOneServer(t *testing.T) {
	s := sharedProbes{window: time.Hour} // the test's pace must not matter
	ctx := context.Background()
	one := configCluster{cfg: &rest.Config{Host: "https://one.example:6443", BearerToken: "a"}}
	down := errors.New("connection refused")
	release := make(chan struct{})
	var asked atomic.Int32
	ask := func() error {
		asked.Add(1)
		<-release
		return down
	}
	errs := make([]error, 20)
	var wg sync.WaitGroup
	leader := make(chan struct{})
	wg.Go(func() {
		close(leader)
		errs[0] = s.probe(ctx, one, ask)
	})
	<-leader
	assertEventuallyAsked(t, &asked, 1)
	for i := 1; i < len(errs); i++ {
		wg.Go(func() { errs[i] = s.probe(ctx, one, ask) })
	}
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), asked.Load(), "one question for twenty clusters of one server")
	for _, err := range errs {
		assert.ErrorIs(t, err, down)
	}

	other := configCluster{cfg: &rest.Config{Host: "https://one.example:6443", BearerToken: "b"}}
	assert.ErrorIs(t, s.probe(ctx, other, ask), down)
	assert.Equal(t, int32(2), asked.Load(), "another identity asks itself")
}

func assertEventuallyAsked(t *testing.T, asked *atomic.Int32, n int32) {
	t.Helper()
	assert.Eventually(t, func() bool { return asked.Load() == n }, DefaultProbeTimeout, pollInterval)
}

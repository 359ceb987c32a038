package sdk

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A hub whose API server does not serve ValidatingAdmissionPolicy (a kcp
// workspace may not) says so once and stops trying, instead of retrying
// every 30 s for as long as it runs. The client answers the apply as a
// real client does for a kind its API server does not serve: with the
// REST mapper's NoKindMatchError.
func TestTheApproveCheckStopsWhereTheKindIsNotServed(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	o := Options{Logger: logger}
	o.Instances.FieldManager = "fleetgraph"
	r := &rollouts{h: &Hub{opts: o}}
	var applies atomic.Int32
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			applies.Add(1)
			return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}}
		},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { r.applyApproveCheck(ctx, c); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("applyApproveCheck kept retrying on a kind the API server does not serve (%d applies)", applies.Load())
	}
	assert.EqualValues(t, 1, applies.Load(), "not retried")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, lines, 1, "said once: %v", lines)
	assert.True(t, strings.Contains(lines[0], "does not serve ValidatingAdmissionPolicy"), lines[0])
}

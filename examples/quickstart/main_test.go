//go:build integration

package main

import (
	"bytes"
	"context"
	_ "embed"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

//go:embed gateways.yaml
var gatewaysYAML []byte

// The quickstart runs end to end, as `make quickstart` runs it, and prints a
// fleet table in which every spoke has its CRD established and one ready
// WebApp.
func TestQuickstartRunsEndToEnd(t *testing.T) {
	fgtesting.SetupLogs()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, options{spokes: 2}), out.String())
	for _, spoke := range []string{"spoke-1", "spoke-2"} {
		assert.Regexp(t, regexp.MustCompile(`(?m)^`+spoke+`\s+Established\s+1\s+1\s*$`), out.String())
	}
	assert.Contains(t, out.String(), "Every WebApp is ACTIVE")
	assert.NotContains(t, out.String(), "kubectl --context", "a stopped fleet gets no kubectl commands")
}

// The kept fleet runs the docs' hub-graph pattern, as a user would try it
// with the printed kubeconfig: gateways.yaml (a forEach over fleet.clusters
// whose targets are computed) applied through the hub's context, and one
// Gateways instance there, put a ConfigMap in each spoke listing the other.
func TestTheKeptQuickstartFleetRunsAHubGraphOverFleetClusters(t *testing.T) {
	fgtesting.SetupLogs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	keptFiles := make(chan fgtesting.KubeconfigFiles, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &out, options{spokes: 2, keep: true, kept: func(f fgtesting.KubeconfigFiles) { keptFiles <- f }})
	}()
	var files fgtesting.KubeconfigFiles
	select {
	case files = <-keptFiles:
	case err := <-done:
		t.Fatalf("the quickstart ended before keeping its fleet: %v\n%s", err, out.String())
	}
	hub := contextClient(t, files.Merged, "hub")
	rgd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(gatewaysYAML, &rgd.Object))
	require.NoError(t, hub.Create(ctx, rgd), "kubectl --context hub apply -f gateways.yaml")
	gw := &unstructured.Unstructured{}
	gw.SetAPIVersion("kro.run/v1alpha1")
	gw.SetKind("Gateways")
	gw.SetNamespace("default")
	gw.SetName("demo")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c := contextClient(t, files.Merged, "hub") // a fresh REST mapper: Gateways is new
		assert.NoError(ct, client.IgnoreAlreadyExists(c.Create(ctx, gw.DeepCopy())))
	}, time.Minute, 200*time.Millisecond, "the hub serves Gateways once the RGD is accepted")

	peers := map[string]string{"spoke-1": "spoke-2", "spoke-2": "spoke-1"}
	for spoke, peer := range peers {
		c := contextClient(t, files.Merged, spoke)
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			cm := &corev1.ConfigMap{}
			require.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo-gateway-" + spoke}, cm))
			assert.Equal(ct, peer, cm.Data["peers"])
		}, time.Minute, 200*time.Millisecond, "%s has its gateway, listing %s", spoke, peer)
	}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		got := gw.DeepCopy()
		require.NoError(ct, hub.Get(ctx, client.ObjectKeyFromObject(gw), got))
		state, _, _ := unstructured.NestedString(got.Object, "status", "state")
		assert.Equal(ct, "ACTIVE", state)
	}, time.Minute, 200*time.Millisecond)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, out.String())
	case <-time.After(time.Minute):
		t.Fatal("the kept quickstart did not stop when interrupted")
	}
}

// contextClient is a client for one context of a kubeconfig file.
func contextClient(t *testing.T, path, context string) client.Client {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	require.NoError(t, err, "context %s", context)
	c, err := client.New(rc, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

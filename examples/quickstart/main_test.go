//go:build integration

package main

import (
	"bytes"
	"context"
	_ "embed"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/examples/internal/keep/keeptest"
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
	ctx := context.Background()
	var out keeptest.Buffer
	files, stop := keeptest.Run(t, &out, func(ctx context.Context, kept func(fgtesting.KubeconfigFiles)) error {
		return run(ctx, &out, options{spokes: 2, keep: true, kept: kept})
	})
	assert.Contains(t, out.String(), "export KUBECONFIG="+files.Merged)
	hub := contextClient(t, files, "hub")
	rgd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(gatewaysYAML, &rgd.Object))
	require.NoError(t, hub.Create(ctx, rgd), "kubectl --context hub apply -f gateways.yaml")
	gw := &unstructured.Unstructured{}
	gw.SetAPIVersion("kro.run/v1alpha1")
	gw.SetKind("Gateways")
	gw.SetNamespace("default")
	gw.SetName("demo")
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		c := contextClient(t, files, "hub") // a fresh REST mapper: Gateways is new
		assert.NoError(ct, client.IgnoreAlreadyExists(c.Create(ctx, gw.DeepCopy())))
	}, time.Minute, 200*time.Millisecond, "the hub serves Gateways once the RGD is accepted")

	peers := map[string]string{"spoke-1": "spoke-2", "spoke-2": "spoke-1"}
	for spoke, peer := range peers {
		c := contextClient(t, files, spoke)
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
	stop()
}

// contextClient is a client for one context of the merged kubeconfig.
func contextClient(t *testing.T, files fgtesting.KubeconfigFiles, context string) client.Client {
	t.Helper()
	rc, err := files.RESTConfig(context)
	require.NoError(t, err)
	c, err := client.New(rc, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	return c
}

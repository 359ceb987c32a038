package hubgraph

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/yaml"

	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// fakeClusters engages the clusters of labels; none of its clusters is
// ever called by resolve.
type fakeClusters struct {
	labels  map[string]map[string]string
	secrets map[string]string
}

type fakeCluster struct{ cluster.Cluster }

func (f fakeClusters) Hub() cluster.Cluster { return fakeCluster{} }
func (f fakeClusters) Cluster(_ context.Context, name string) (cluster.Cluster, error) {
	if _, ok := f.labels[name]; !ok {
		return nil, errors.New("not engaged")
	}
	return fakeCluster{}, nil
}
func (f fakeClusters) Labels(name string) map[string]string { return f.labels[name] }
func (f fakeClusters) Names() []string {
	var out []string
	for n := range f.labels {
		out = append(out, n)
	}
	return out
}
func (f fakeClusters) SecretCluster(ns, name string) (string, bool) {
	c, ok := f.secrets[ns+"/"+name]
	_, engaged := f.labels[c]
	return c, ok && engaged
}

const policyRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: p}
spec:
  schema:
    apiVersion: v1alpha1
    kind: P
    spec:
      to: string
  %s
  resources:
  - id: fixed
    target: {cluster: {name: east}}
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: fixed}}
  - id: computed
    target: {cluster: {name: '${schema.spec.to}'}}
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: computed}}
  - id: bySecret
    target: {cluster: {kubeconfigSecretName: west, kubeconfigSecretNamespace: fleet}}
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: secret}}
  - id: local
    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: local}}
`

func policyServer(t *testing.T, rgdTarget string, pol Policy) *server {
	t.Helper()
	return secretServer(t, rgdTarget, pol, map[string]string{"fleet/west": "west"})
}

func secretServer(t *testing.T, rgdTarget string, pol Policy, secrets map[string]string) *server {
	t.Helper()
	rgd := &v1alpha1.ResourceGraphDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(policyRGD, rgdTarget)), rgd))
	g, err := graph.Compile(rgd, graph.Options{})
	require.NoError(t, err)
	rt := New(Options{Policy: pol, Clusters: fakeClusters{
		labels:  map[string]map[string]string{"east": {"mesh": "true"}, "west": {"mesh": "true", "tier": "prod"}, "other": {}},
		secrets: secrets,
	}})
	return newServer(rt, g, 1)
}

func wantsTo(to string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"to": to}}}
}

func TestResolvePlacesEveryResource(t *testing.T) {
	s := policyServer(t, "", Policy{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}})
	p, err := s.targets.resolve(context.Background(), wantsTo("west"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"fixed": "east", "computed": "west", "bySecret": "west", "local": ""}, p.clusterOf)
	assert.Len(t, p.clusters, 3, "the hub, east and west")
}

func TestResolveRefusals(t *testing.T) {
	mesh := &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}
	cases := map[string]struct {
		rgdTarget string
		policy    Policy
		to        string
		want      string
	}{
		"computed without an allowed set": {"", Policy{}, "west", `resource "computed": cluster "west": a target computed from the instance needs the platform to allow it`},
		"outside the platform's selector": {"", Policy{Selector: mesh}, "other", `resource "computed": cluster "other": outside the platform's allowed clusters (mesh=true)`},
		"not engaged":                     {"", Policy{Selector: mesh}, "nowhere", `resource "computed": cluster "nowhere": not an engaged cluster`},
		"outside the RGD's allowed set": {"target: {allowedClusters: {matchLabels: {tier: prod}}}", Policy{Selector: mesh}, "east",
			`resource "computed": cluster "east": outside the RGD's spec.target.allowedClusters (tier=prod)`},
		"refused by the hook": {"", Policy{Allow: func(_ context.Context, _ *graph.Graph, inst *unstructured.Unstructured, c string) error {
			if c == "east" {
				return nil
			}
			return errors.New("tenant may not use " + c)
		}}, "west", `resource "computed": cluster "west": refused by the platform's hook: tenant may not use west`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := policyServer(t, tc.rgdTarget, tc.policy)
			_, err := s.targets.resolve(context.Background(), wantsTo(tc.to))
			require.ErrorIs(t, err, ErrTargetRefused)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A Secret target is mapped through the provider, and refused, naming the
// resource, the Secret and the rule, when the Secret is unknown, when its
// cluster is not engaged, or when the same rules as for a named cluster
// refuse that cluster.
func TestResolveSecretTargets(t *testing.T) {
	mesh := &metav1.LabelSelector{MatchLabels: map[string]string{"mesh": "true"}}
	hook := func(_ context.Context, _ *graph.Graph, _ *unstructured.Unstructured, c string) error {
		if c == "other" {
			return errors.New("not for tenants")
		}
		return nil
	}
	cases := map[string]struct {
		secrets map[string]string
		policy  Policy
		want    string
	}{
		"unknown Secret": {map[string]string{}, Policy{Allow: hook},
			`resource "bySecret": kubeconfig Secret "fleet/west": no cluster comes from that Secret`},
		"cluster not engaged": {map[string]string{"fleet/west": "gone"}, Policy{Allow: hook},
			`resource "bySecret": kubeconfig Secret "fleet/west" (cluster "gone"): the cluster of that kubeconfig Secret is not engaged`},
		"outside the platform's selector": {map[string]string{"fleet/west": "other"}, Policy{Selector: mesh},
			`resource "bySecret": kubeconfig Secret "fleet/west" (cluster "other"): outside the platform's allowed clusters (mesh=true)`},
		"refused by the hook": {map[string]string{"fleet/west": "other"}, Policy{Allow: hook},
			`resource "bySecret": kubeconfig Secret "fleet/west" (cluster "other"): refused by the platform's hook: not for tenants`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := secretServer(t, "", tc.policy, tc.secrets)
			_, err := s.targets.resolve(context.Background(), wantsTo("west"))
			require.ErrorIs(t, err, ErrTargetRefused)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

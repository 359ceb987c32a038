package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sigsyaml "sigs.k8s.io/yaml"
)

const testYAML = `apiVersion: chainsaw.kyverno.io/v1alpha1
kind: Test
metadata:
  name: t
spec:
  steps:
  - name: setup
    try:
    - apply:
        file: crd.yaml
    - apply:
        file: rgd.yaml
    - assert:
        file: instance.yaml
    - delete:
        ref:
          apiVersion: kro.run/v1alpha1
          kind: ResourceGraphDefinition
          name: r
    - sleep:
        duration: 1s
    catch:
    - podLogs:
        namespace: kro-system
`

func TestAdaptSendsRGDsToTheHubCRDsToEverySpokeAndDropsKroPodLogs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("crd.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n")
	write("rgd.yaml", "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: r\n")
	write("instance.yaml", "apiVersion: kro.run/v1alpha1\nkind: App\nmetadata:\n  name: a\n")

	out, changes, err := adapt([]byte(testYAML), dir, []string{"spoke-2", "spoke-3"})
	require.NoError(t, err)

	var got map[string]any
	require.NoError(t, sigsyaml.Unmarshal(out, &got))
	step := got["spec"].(map[string]any)["steps"].([]any)[0].(map[string]any)
	clusters := []any{}
	for _, o := range step["try"].([]any) {
		op := o.(map[string]any)
		assert.NotContains(t, op, "cluster", "chainsaw reads the cluster inside the action, and refuses it beside")
		_, body := operation(op)
		if body == nil {
			clusters = append(clusters, nil)
			continue
		}
		clusters = append(clusters, body["cluster"])
	}
	// crd on the default spoke, then on each other spoke; the RGD apply and
	// delete on the hub; the instance and the sleep where chainsaw's
	// default cluster is.
	require.Equal(t, []any{nil, "spoke-2", "spoke-3", "hub", nil, "hub", nil}, clusters)
	require.NotContains(t, step, "catch", "kro's pod-log collector has nothing to collect")
	require.Len(t, changes, 5)
}

func TestAdaptRefusesAFileMixingRGDsAndOtherKinds(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rgd.yaml"), []byte(
		"apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\n---\napiVersion: v1\nkind: ConfigMap\n"), 0o644))
	test := "spec:\n  steps:\n  - name: s\n    try:\n    - apply:\n        file: rgd.yaml\n"

	_, _, err := adapt([]byte(test), dir, nil)

	require.ErrorContains(t, err, "mixes RGDs or CRDs with other kinds")
}

func TestAdaptBookkeepingReadsKrosAsOurs(t *testing.T) {
	out, notes := adaptBookkeeping("assert.yaml", []byte(`apiVersion: kro.run/v1alpha1
kind: App
metadata:
  finalizers:
    - kro.run/finalizer
  labels:
    kro.run/owned: "true"
    kro.run/resource-graph-definition-name: app
  name: a
---
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    kro.run/instance-name: a
    kro.run/owned: "true"
    app: web
  name: a
`))
	assert.Len(t, notes, 5)
	docs := strings.Split(string(out), "---\n")
	require.Len(t, docs, 2)
	var inst, child map[string]any
	require.NoError(t, sigsyaml.Unmarshal([]byte(docs[0]), &inst))
	require.NoError(t, sigsyaml.Unmarshal([]byte(docs[1]), &child))
	md := inst["metadata"].(map[string]any)
	assert.Equal(t, []any{"fleetgraph.dev/finalizer"}, md["finalizers"])
	assert.NotContains(t, md, "labels", "fleetgraph labels no instance")
	assert.Equal(t, map[string]any{"fleetgraph.dev/instance-name": "a", "app.kubernetes.io/managed-by": "fleetgraph", "app": "web"},
		child["metadata"].(map[string]any)["labels"])

	same := []byte("kind: App\nmetadata:\n  name: a\n")
	out, notes = adaptBookkeeping("instance.yaml", same)
	assert.Equal(t, same, out)
	assert.Empty(t, notes)
}

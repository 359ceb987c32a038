package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

// Each Deployment (one leader-elected, one sharded) runs this command with
// flags it accepts, and every role it binds is one config/rbac defines.
func TestDeployManifestMatchesTheBinaryAndRoles(t *testing.T) {
	roles := map[string]bool{}
	for _, obj := range decodeAll(t, "../../config/rbac/hub.yaml") {
		roles[obj.GetKind()+"/"+obj.GetName()] = true
	}
	sharded := map[string]bool{"hub.yaml": false, "hub-replicas.yaml": true}
	for file, shard := range sharded {
		var deployments int
		for _, obj := range decodeAll(t, "../../config/deploy/"+file) {
			switch obj.GetKind() {
			case "ClusterRoleBinding", "RoleBinding":
				kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
				name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
				assert.True(t, roles[kind+"/"+name], "%s: %s %s binds %s %s, which config/rbac/hub.yaml does not define", file, obj.GetKind(), obj.GetName(), kind, name)
			case "Deployment":
				deployments++
				containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
				require.Len(t, containers, 1)
				args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
				o, err := parse(t, args...)
				assert.NoError(t, err, "%s: the Deployment's args must parse", file)
				assert.Equal(t, shard, o.replicas.shard, "%s: sharded replicas", file)
			}
		}
		assert.Equal(t, 1, deployments, file)
	}
}

func decodeAll(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, file)
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// The hub's role lets it install, bind and remove hub graphs' admission
// policies on the hub (hubgraph.StampPolicy).
func TestHubRoleAllowsHubGraphAdmissionPolicies(t *testing.T) {
	granted := map[string]bool{}
	for _, obj := range decodeAll(t, "../../config/rbac/hub.yaml") {
		if obj.GetKind() != "ClusterRole" || obj.GetName() != "fleetgraph-hub" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
		for _, r := range rules {
			rule := r.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			for _, g := range groups {
				for _, res := range resources {
					for _, v := range verbs {
						granted[g+"/"+res+"/"+v] = true
					}
				}
			}
		}
	}
	for _, res := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
		for _, v := range []string{"get", "create", "patch", "delete"} {
			assert.True(t, granted["admissionregistration.k8s.io/"+res+"/"+v], "fleetgraph-hub must allow %s on %s", v, res)
		}
	}
}

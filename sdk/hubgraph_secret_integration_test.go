//go:build integration

package sdk_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
)

var _ sdk.SecretClusterMapper = &secret.Provider{}

// secretRGD is a hub graph with one resource whose target is KREP-012's
// kubeconfig Secret.
const secretRGD = `
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: %[1]s
spec:
  schema:
    apiVersion: v1alpha1
    kind: %[2]s
    spec:
      value: string | default="v"
  resources:
  - id: store
    target:
      cluster:
        kubeconfigSecretName: %[3]s
        kubeconfigSecretNamespace: %[4]s
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-store
      data:
        value: ${schema.spec.value}
`

// A target naming a kubeconfig Secret writes in the cluster the secret
// provider engaged from that Secret; one naming a Secret the provider does
// not read, or whose cluster the platform does not allow, is refused before
// any write, naming the resource, the Secret and the rule.
func TestHubGraphSecretTargets(t *testing.T) {
	t.Parallel()
	f, h, _ := startHubGraphFleet(t, meshOnly())
	register := func(name, kind, secretName, secretNamespace string) schema.GroupVersionKind {
		registerGraphs(t, h, fmt.Sprintf(secretRGD, name, kind, secretName, secretNamespace))
		return schema.GroupVersionKind{Group: "kro.run", Version: "v1alpha1", Kind: kind}
	}

	t.Run("the Secret's cluster gets the child", func(t *testing.T) {
		gvk := register("vault", "Vault", "spoke-1", secret.DefaultNamespace)
		createWhenServed(t, f.hub, instance(gvk, "v1", map[string]any{"value": "x"}))
		requireState(t, f.hub, gvk, "v1", "ACTIVE")
		f.requireData(t, "spoke-1", "v1-store", map[string]string{"value": "x"})
		for _, c := range []string{"hub", "spoke-2", "spoke-3"} {
			f.assertNoConfigMap(t, c, "v1-store", "nothing in "+c)
		}
	})

	refused := func(t *testing.T, gvk schema.GroupVersionKind, name string, want ...string) {
		t.Helper()
		createWhenServed(t, f.hub, instance(gvk, name, nil))
		requireSays(t, f.hub, gvk, name, instanceSays{
			State: "ERROR", Condition: "TargetsAllowed", Status: "False", Message: want,
			Also: func(ct *assert.CollectT, u *unstructured.Unstructured) {
				assert.Empty(ct, u.GetFinalizers(), "a refused instance holds no finalizer")
			},
		})
		f.requireNowhere(t, name)
	}

	t.Run("a cluster outside the allowed set is refused", func(t *testing.T) {
		gvk := register("vault-out", "VaultOut", "spoke-3", secret.DefaultNamespace)
		refused(t, gvk, "v3", `resource "store"`, `kubeconfig Secret "fleetgraph-system/spoke-3" (cluster "spoke-3")`, "outside the platform's allowed clusters (mesh=true)")
	})

	t.Run("a Secret the provider does not read is refused", func(t *testing.T) {
		gvk := register("vault-none", "VaultNone", "spoke-1", "kube-system")
		refused(t, gvk, "vn", `resource "store"`, `kubeconfig Secret "kube-system/spoke-1"`, "no cluster comes from that Secret")
	})
}

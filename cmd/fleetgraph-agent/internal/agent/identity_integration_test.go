//go:build integration

package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/cmd/fleetgraph-agent/internal/agent"
	"github.com/fleetgraph/fleetgraph/sdk"
	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// An agent's identity reaches its own cluster's namespace on the hub and
// nothing else, as the API server's RBAC decides: it reads its own
// assignments and writes its own reports and heartbeat, and may neither
// read another cluster's assignments, nor write another's reports or
// heartbeat, nor request another's tokens, nor write its own
// assignments or its PullCluster (its labels choose its waves). The
// agent rotates its token, keeps each new one in its kubeconfig Secret,
// and keeps working across rotations.
func TestAgentIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := fgtesting.StartFleet(t, 1) // its own: the hub serves every PullCluster on its hub cluster
	startHub(t, fleet.Hub.Config, fgtesting.NewProvider(), sdk.Options{RGDs: sdk.RGDOptions{DisableController: true}})
	a := join(t, fleet.Hub, "edge-a", nil)
	join(t, fleet.Hub, "edge-b", nil)
	admin := newClient(t, fleet.Hub.Config)
	for _, cluster := range []string{"edge-a", "edge-b"} {
		asg := &fgv1alpha1.GraphAssignment{
			ObjectMeta: metav1.ObjectMeta{Namespace: fgv1alpha1.PullNamespace(cluster), Name: "secret-graph"},
			Spec: fgv1alpha1.GraphAssignmentSpec{Revision: 1, Cluster: fgv1alpha1.AssignedCluster{Name: cluster},
				Snapshot: fgv1alpha1.ResourceGraphDefinitionSnapshot{Name: "secret-graph"}},
		}
		require.NoError(t, admin.Create(ctx, asg))
	}

	t.Run("confined to its namespace", func(t *testing.T) {
		asA := newClient(t, a)
		own, other := fgv1alpha1.PullNamespace("edge-a"), fgv1alpha1.PullNamespace("edge-b")
		require.NoError(t, asA.Get(ctx, client.ObjectKey{Namespace: own, Name: "secret-graph"}, &fgv1alpha1.GraphAssignment{}))
		require.NoError(t, asA.Create(ctx, report(own)))
		require.NoError(t, asA.Create(ctx, lease(own)))

		forbidden := map[string]error{
			"read another's assignment":  asA.Get(ctx, client.ObjectKey{Namespace: other, Name: "secret-graph"}, &fgv1alpha1.GraphAssignment{}),
			"list another's assignments": asA.List(ctx, &fgv1alpha1.GraphAssignmentList{}, client.InNamespace(other)),
			"list every assignment":      asA.List(ctx, &fgv1alpha1.GraphAssignmentList{}),
			"write another's report":     asA.Create(ctx, report(other)),
			"write another's heartbeat":  asA.Create(ctx, lease(other)),
			"write its own assignment": asA.Update(ctx, &fgv1alpha1.GraphAssignment{
				ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "secret-graph"},
				Spec:       fgv1alpha1.GraphAssignmentSpec{Revision: 2, Cluster: fgv1alpha1.AssignedCluster{Name: "edge-a"}},
			}),
			"relabel its PullCluster": asA.Patch(ctx, &fgv1alpha1.PullCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge-a"}},
				client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"ring":"canary"}}}`))),
		}
		cs, err := kubernetes.NewForConfig(a)
		require.NoError(t, err)
		_, forbidden["request another's token"] = cs.CoreV1().ServiceAccounts(other).CreateToken(ctx, fgv1alpha1.PullAgentName,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(600))}}, metav1.CreateOptions{})
		for what, err := range forbidden {
			assert.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
		}
	})

	t.Run("rotates its token", func(t *testing.T) {
		spoke := fleet.Spokes()[0]
		local := newClient(t, spoke.Config)
		bootstrap := bootstrapConfig(t, fleet.Hub, "edge-b", 10*time.Minute)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hub-kubeconfig"},
			Data:       map[string][]byte{"kubeconfig": kubeconfigOf(t, bootstrap)},
		}
		require.NoError(t, local.Create(ctx, secret))
		startAgent(t, "edge-b", bootstrap, spoke, func(o *agent.Options) {
			o.Credential = client.ObjectKeyFromObject(secret)
			o.TokenTTL = 10 * time.Minute
			o.TokenRotation = 0.005 // every three seconds
		})
		seen := map[string]bool{bootstrap.BearerToken: true}
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			require.NoError(ct, local.Get(ctx, client.ObjectKeyFromObject(secret), secret))
			cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
			require.NoError(ct, err)
			seen[cfg.BearerToken] = true
			assert.GreaterOrEqual(ct, len(seen), 3, "the bootstrap token and two rotations")
		}, wait, tick, "the agent rotates its token into its Secret")
		require.NoError(t, local.Get(ctx, client.ObjectKeyFromObject(secret), secret))
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "system:serviceaccount:"+fgv1alpha1.PullNamespace("edge-b")+":"+fgv1alpha1.PullAgentName,
			review.Status.UserInfo.Username, "the rotated token is the cluster's agent")
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: fgv1alpha1.PullNamespace("edge-b"), Name: fgv1alpha1.PullAgentName}
		require.NoError(t, admin.Get(ctx, key, lease))
		renewed := lease.Spec.RenewTime.Time
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			require.NoError(ct, admin.Get(ctx, key, lease))
			assert.True(ct, lease.Spec.RenewTime.After(renewed), "the agent keeps renewing its heartbeat with rotated tokens")
		}, wait, tick)
	})
}

func report(namespace string) *fgv1alpha1.GraphReport {
	return &fgv1alpha1.GraphReport{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "forged"},
		Status:     fgv1alpha1.GraphReportStatus{CRD: fgv1alpha1.ReportedCRD{State: "Established"}, Time: metav1.Now()},
	}
}

func lease(namespace string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fgv1alpha1.PullAgentName}}
}

// kubeconfigOf renders a token config as a kubeconfig.
func kubeconfigOf(t testing.TB, cfg *rest.Config) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	kc.CurrentContext = "hub"
	raw, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return raw
}

//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgraph/fleetgraph/internal/contract"
	"github.com/fleetgraph/fleetgraph/providers/secret"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// The binary runs with identities bound to exactly the documented roles in
// config/rbac, not as admin: it installs the RGD CRD, serves an RGD on a
// spoke, and deletes an instance with its children, and it never logs a
// refusal.
func TestBinaryRunsUnderTheDocumentedRBAC(t *testing.T) {
	t.Parallel()
	fleet := fgtesting.StartFleet(t, 1)
	spoke := fleet.Spokes()[0]
	admin, err := client.New(fleet.Hub.Config, client.Options{Scheme: fgtesting.NewScheme()})
	require.NoError(t, err)
	spokeAdmin, err := client.New(spoke.Config, client.Options{})
	require.NoError(t, err)

	require.NoError(t, admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.DefaultNamespace}}))
	hubUser := bindDocumentedRoles(t, fleet.Hub, admin, "../../config/rbac/hub.yaml", "fleetgraph-hub")
	spokeUser := bindDocumentedRoles(t, spoke, spokeAdmin, "../../config/rbac/spoke.yaml", "fleetgraph")

	restricted, err := client.New(hubUser.config, client.Options{})
	require.NoError(t, err)
	err = restricted.List(context.Background(), &corev1.SecretList{}, client.InNamespace("kube-system"))
	require.True(t, apierrors.IsForbidden(err), "the hub's identity must not read Secrets outside its namespace, got %v", err)

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, hubUser.kubeconfig, 0o600))
	p := startProcess(t, buildBinary(t), "--kubeconfig", kubeconfig, "--allow-loopback-spokes", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--leader-elect", "--leader-election-namespace="+secret.DefaultNamespace)

	registerSpoke(t, admin, spoke.Name, spokeUser.kubeconfig)
	applyWebAppRGD(t, admin, p)
	app := createActiveWebApp(t, spokeAdmin, "rbac", p)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &admissionv1.MutatingAdmissionPolicyBindingList{}
		require.NoError(ct, spokeAdmin.List(context.Background(), list, client.MatchingLabels{contract.LabelGraph: "webapp"}))
		var names []string
		for _, b := range list.Items {
			names = append(names, b.Name)
		}
		assert.Contains(ct, names, "fleetgraph.webapps.kro.run")
	}, time.Minute, 100*time.Millisecond, "the admission policy is bound under the documented roles: %s", p.logs)

	require.NoError(t, spokeAdmin.Delete(context.Background(), app))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := spokeAdmin.Get(context.Background(), client.ObjectKeyFromObject(app), app.DeepCopy())
		assert.True(ct, apierrors.IsNotFound(err), "instance still there: %v", err)
		err = spokeAdmin.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "rbac"}, &appsv1.Deployment{})
		assert.True(ct, apierrors.IsNotFound(err), "child Deployment still there: %v", err)
	}, time.Minute, 100*time.Millisecond, "deletion: %s", p.logs)

	assert.NotContains(t, strings.ToLower(p.logs.String()), "forbidden", "the documented roles must cover every call the hub makes")
}

// user is an identity of a test cluster.
type user struct {
	config     *rest.Config
	kubeconfig []byte
}

// bindDocumentedRoles applies the roles in file to a cluster and binds them
// all to a new user called name: each ClusterRole with a ClusterRoleBinding,
// each Role with a RoleBinding in its namespace.
func bindDocumentedRoles(t *testing.T, c *fgtesting.Cluster, admin client.Client, file, name string) user {
	t.Helper()
	ctx := context.Background()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}
	for _, obj := range decodeAll(t, file) {
		require.NoError(t, admin.Create(ctx, obj), "%s %s", obj.GetKind(), obj.GetName())
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: obj.GetKind(), Name: obj.GetName()}
		meta := metav1.ObjectMeta{Name: name + "-" + obj.GetName(), Namespace: obj.GetNamespace()}
		switch obj.GetKind() {
		case "ClusterRole":
			require.NoError(t, admin.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subject}))
		case "Role":
			require.NoError(t, admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subject}))
		}
	}
	cfg, kubeconfig, err := c.AddUser(name)
	require.NoError(t, err)
	return user{config: cfg, kubeconfig: kubeconfig}
}

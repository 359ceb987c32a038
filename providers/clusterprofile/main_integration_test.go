//go:build integration

package clusterprofile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/fleetgraph/fleetgraph/providers/internal/providertest"
	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

const (
	wait = providertest.Wait
	tick = providertest.Tick
)

var (
	fleet *fgtesting.Fleet
	// pluginPath is the test credential plugin (testdata/plugin), built
	// once.
	pluginPath string
	// tokens maps each spoke's server URL to a token of a cluster-admin
	// ServiceAccount there, as the test plugin reads it.
	tokens map[string]string
	// logs holds everything logged, to check it for credentials.
	logs = &providertest.Buffer{}
)

// sentinel is set in the test process's environment: a plugin must never
// see it.
const sentinel = "FLEETGRAPH_HUB_SENTINEL"

func TestMain(m *testing.M) {
	log.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	if err := os.Setenv(sentinel, "must-not-reach-a-plugin"); err != nil {
		return 0, err
	}
	bin, err := os.MkdirTemp("", "clusterprofile-plugin-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(bin)
	pluginPath = filepath.Join(bin, "plugin")
	if out, err := exec.Command("go", "build", "-o", pluginPath, "./testdata/plugin").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building the test plugin: %w: %s", err, out)
	}
	f, err := fgtesting.NewFleet(fgtesting.FleetOptions{Spokes: 2})
	if err != nil {
		return 0, err
	}
	fleet = f
	defer func() {
		if err := f.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err := installClusterProfileCRD(); err != nil {
		return 0, err
	}
	tokens = map[string]string{}
	for _, s := range fleet.Spokes() {
		token, err := adminToken(s, "fleetgraph-hub")
		if err != nil {
			return 0, err
		}
		tokens[hostOf(s)] = token
	}
	return m.Run(), nil
}

// installClusterProfileCRD installs the ClusterProfile CRD that the
// cluster-inventory-api module ships, from the module's own directory.
func installClusterProfileCRD() error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-inventory-api").Output()
	if err != nil {
		return fmt.Errorf("locating the cluster-inventory-api module: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases")
	_, err = envtest.InstallCRDs(fleet.Hub.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(dir, "multicluster.x-k8s.io_clusterprofiles.yaml")},
	})
	return err
}

// adminToken makes a cluster-admin ServiceAccount called name on c and
// returns a token of it, valid for a day.
func adminToken(c *fgtesting.Cluster, name string) (string, error) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: name}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token on %s: %w", c.Name, err)
	}
	return tr.Status.Token, nil
}

// writeTokens writes a tokens file for the test plugin.
func writeTokens(path string, byServer map[string]string) error {
	data, err := json.Marshal(byServer)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

var hostOf = providertest.Host

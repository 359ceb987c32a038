package hub

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"weak"

	"k8s.io/client-go/rest"
)

// Clusters behind one API server share everything the fan-out checks and
// writes: the CRD is cluster-scoped, and so are the discovery and OpenAPI
// documents. A fleet of simulated clusters, namespaces or virtual clusters
// on one server would otherwise ask the same questions and apply the same
// CRD once per cluster. serverKey names a server and the identity a cluster
// reaches it with, so that such clusters share one answer (shared_ensure.go)
// while clusters that differ in either (another server, or credentials that
// may see less) never do.

// serverKey returns the server and identity cfg reaches, as a digest: the
// credentials in it are hashed, never kept. It returns false when cfg does
// not say all of it (a custom transport or dialer may add its own identity
// or route elsewhere), and such a cluster is checked on its own.
//
// A cluster's config is hashed once: every Ensure and probe asks, and with
// thousands of clusters the hashing was a twentieth of the hub's CPU while
// a fleet engaged. The answer is kept for as long as the config lives
// (cluster configs are not changed once the cluster is built; a rotation
// builds a new cluster).
func serverKey(cfg *rest.Config) (string, bool) {
	if cfg == nil {
		return "", false
	}
	wp := weak.Make(cfg)
	if k, ok := serverKeys.Load(wp); ok {
		key := k.(cachedKey)
		return key.key, key.ok
	}
	key, ok := computeServerKey(cfg)
	if _, loaded := serverKeys.LoadOrStore(wp, cachedKey{key, ok}); !loaded {
		runtime.AddCleanup(cfg, func(wp weak.Pointer[rest.Config]) { serverKeys.Delete(wp) }, wp)
	}
	return key, ok
}

// serverKeys caches serverKey by config, weakly: an entry goes with its
// config.
var serverKeys sync.Map // weak.Pointer[rest.Config] -> cachedKey

type cachedKey struct {
	key string
	ok  bool
}

func computeServerKey(cfg *rest.Config) (string, bool) {
	if cfg == nil || cfg.Host == "" || cfg.Transport != nil || cfg.WrapTransport != nil ||
		cfg.Dial != nil || cfg.Proxy != nil || cfg.NextProtos != nil {
		return "", false
	}
	h := sha256.New()
	field := func(name string, v any) { fmt.Fprintf(h, "%s=%q\n", name, fmt.Sprint(v)) }
	field("host", normalHost(cfg.Host))
	field("apiPath", cfg.APIPath)
	field("serverName", cfg.ServerName)
	field("insecure", cfg.Insecure)
	field("caFile", cfg.CAFile)
	field("caData", cfg.CAData)
	field("certFile", cfg.CertFile)
	field("certData", cfg.CertData)
	field("keyFile", cfg.KeyFile)
	field("keyData", cfg.KeyData)
	field("bearerToken", cfg.BearerToken)
	field("bearerTokenFile", cfg.BearerTokenFile)
	field("username", cfg.Username)
	field("password", cfg.Password)
	field("impersonateUser", cfg.Impersonate.UserName)
	field("impersonateUID", cfg.Impersonate.UID)
	field("impersonateGroups", cfg.Impersonate.Groups)
	field("impersonateExtra", sortedExtra(cfg.Impersonate.Extra))
	if p := cfg.AuthProvider; p != nil {
		field("authProvider", p.Name)
		field("authProviderConfig", sortedMap(p.Config))
	}
	if e := cfg.ExecProvider; e != nil {
		field("exec", fmt.Sprintf("%s %q %v %s", e.Command, e.Args, e.Env, e.APIVersion))
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// normalHost is host in lower case with a scheme and no trailing slash.
func normalHost(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "/"))
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return host
}

func sortedMap(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func sortedExtra(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(out)
	return out
}

package access

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var (
	// ErrUnsafeKubeconfig means a kubeconfig would make the hub run a program
	// (an exec credential plugin), use an auth-provider plugin, read a file
	// of the hub's file system, go through a proxy it names, skip TLS
	// verification, speak plain HTTP or dial an address the policy refuses
	// (ErrRefusedAddress), and the Options did not allow it.
	ErrUnsafeKubeconfig = errors.New("unsafe kubeconfig")

	// ErrInvalidKubeconfig means a kubeconfig cannot be parsed or does not
	// describe one usable cluster (no current context, a missing cluster or
	// user entry, a malformed server URL, credentials in the server URL).
	ErrInvalidKubeconfig = errors.New("invalid kubeconfig")

	// ErrMissingKubeconfig means a Secret has no data under the kubeconfig
	// key, or the data is empty: there is nothing to parse.
	ErrMissingKubeconfig = errors.New("missing kubeconfig")

	// ErrDuplicateServer means a cluster's description (a Secret's
	// kubeconfig, a ClusterProfile's access provider) points at an API
	// server (same URL and CA) that another cluster of the same provider
	// holds already: one cluster is never engaged twice under two names.
	ErrDuplicateServer = errors.New("API server registered twice")
)

// Safety says which kubeconfig features a Provider accepts and which
// addresses it lets the hub dial. The zero value accepts none of the
// features (a kubeconfig must carry its credentials and certificates
// inline, and reach its server directly over verified TLS) and refuses
// loopback, link-local and metadata addresses; private and public
// addresses are accepted. Every field defaults to false or empty.
type Safety struct {
	// AllowExec accepts exec credential plugins (users[].user.exec), which
	// run a program on the hub with the hub's privileges.
	AllowExec bool
	// AllowAuthProvider accepts auth-provider plugins
	// (users[].user.auth-provider), which may read files and run commands.
	AllowAuthProvider bool
	// AllowLocalFiles accepts fields that name a file on the hub:
	// certificate-authority, client-certificate, client-key and tokenFile.
	AllowLocalFiles bool
	// AllowProxyURL accepts a cluster's proxy-url. The hub then connects to
	// that proxy (its address is checked like a server's), and the proxy
	// reaches the server for it: the server's address is the proxy's to
	// check. Proxies of the hub's environment (HTTPS_PROXY, NO_PROXY) are
	// the embedder's choice and are used as client-go uses them; the
	// server behind one is checked before the request goes to it.
	AllowProxyURL bool
	// AllowInsecureTLS accepts insecure-skip-tls-verify: the hub would
	// send the kubeconfig's credentials to whoever answers at the address.
	AllowInsecureTLS bool
	// AllowPlainHTTP accepts http:// servers: credentials and traffic
	// travel unencrypted.
	AllowPlainHTTP bool
	// AllowLoopback accepts servers on loopback addresses (127.0.0.0/8,
	// ::1, and 0.0.0.0/8 and ::, which reach the local host) and names
	// that resolve to them: the hub's own host or pod. Local test fleets
	// need it.
	AllowLoopback bool
	// AllowLinkLocal accepts link-local addresses (169.254.0.0/16,
	// fe80::/10), where clouds serve instance metadata and credentials
	// (169.254.169.254), and the metadata addresses outside them
	// (100.100.100.200, fd00:ec2::254).
	AllowLinkLocal bool
	// DenyPrivate refuses private addresses (10.0.0.0/8, 172.16.0.0/12,
	// 192.168.0.0/16, 100.64.0.0/10, fc00::/7), where in-cluster Services
	// and a platform's own network live. Off by default: spokes usually
	// sit on private networks.
	DenyPrivate bool
	// AllowedCIDRs and DeniedCIDRs accept or refuse the addresses in them
	// whatever their kind; where both match, the longer prefix decides and
	// a tie refuses. DeniedCIDRs 0.0.0.0/0 and ::/0 with the spokes'
	// networks in AllowedCIDRs admits those networks alone. Multicast and
	// broadcast addresses are refused unless in AllowedCIDRs.
	AllowedCIDRs, DeniedCIDRs []netip.Prefix
}

// parseKubeconfig parses data and reduces it to its current context. It
// builds nothing and contacts nothing. Errors never quote the data.
func parseKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	if len(data) == 0 {
		return nil, ErrMissingKubeconfig
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The decoder's message may quote the input: leave it out.
		return nil, fmt.Errorf("%w: not a kubeconfig document", ErrInvalidKubeconfig)
	}
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("%w: no current-context", ErrInvalidKubeconfig)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: current-context %q does not resolve to a cluster and a user",
			ErrInvalidKubeconfig, cfg.CurrentContext)
	}
	return cfg, nil
}

// Validate reports whether cfg uses a feature s does not allow, or a server
// URL that is malformed or carries credentials. It reads only cfg: it runs
// nothing and opens no file. The error wraps ErrUnsafeKubeconfig or
// ErrInvalidKubeconfig and names the entries and fields concerned, never
// their values.
func (s Safety) Validate(cfg *clientcmdapi.Config) error {
	var problems []error
	for _, name := range sortedKeys(cfg.AuthInfos) {
		problems = append(problems, s.validateUser(name, cfg.AuthInfos[name])...)
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		problems = append(problems, s.validateCluster(name, cfg.Clusters[name])...)
	}
	return errors.Join(problems...)
}

func (s Safety) validateUser(name string, u *clientcmdapi.AuthInfo) []error {
	var problems []error
	unsafe := func(field, allow string) {
		problems = append(problems, fmt.Errorf("%w: user %q uses %s (set %s to accept it)",
			ErrUnsafeKubeconfig, name, field, allow))
	}
	if u.Exec != nil && !s.AllowExec {
		unsafe("an exec credential plugin", "AllowExec")
	}
	if u.AuthProvider != nil && !s.AllowAuthProvider {
		unsafe("an auth-provider plugin", "AllowAuthProvider")
	}
	if !s.AllowLocalFiles {
		for _, f := range []struct{ field, path string }{
			{"client-certificate", u.ClientCertificate},
			{"client-key", u.ClientKey},
			{"tokenFile", u.TokenFile},
		} {
			if f.path != "" {
				unsafe("a local file ("+f.field+")", "AllowLocalFiles")
			}
		}
	}
	return problems
}

func (s Safety) validateCluster(name string, c *clientcmdapi.Cluster) []error {
	var problems []error
	unsafe := func(what, allow string) {
		problems = append(problems, fmt.Errorf("%w: cluster %q %s (set %s to accept it)", ErrUnsafeKubeconfig, name, what, allow))
	}
	if c.CertificateAuthority != "" && !s.AllowLocalFiles {
		unsafe("uses a local file (certificate-authority)", "AllowLocalFiles")
	}
	if c.ProxyURL != "" && !s.AllowProxyURL {
		unsafe("goes through a proxy (proxy-url)", "AllowProxyURL")
	}
	if c.InsecureSkipTLSVerify && !s.AllowInsecureTLS {
		unsafe("skips TLS verification (insecure-skip-tls-verify)", "AllowInsecureTLS")
	}
	u, err := url.Parse(c.Server)
	switch {
	case c.Server == "":
		problems = append(problems, fmt.Errorf("%w: cluster %q has no server", ErrInvalidKubeconfig, name))
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		problems = append(problems, fmt.Errorf("%w: cluster %q has a malformed server URL", ErrInvalidKubeconfig, name))
	case u.User != nil:
		problems = append(problems, fmt.Errorf("%w: cluster %q has credentials in its server URL",
			ErrInvalidKubeconfig, name))
	default:
		if u.Scheme == "http" && !s.AllowPlainHTTP {
			unsafe("speaks plain HTTP (an http:// server)", "AllowPlainHTTP")
		}
		problems = append(problems, s.validateHost(name, u.Hostname())...)
	}
	return problems
}

// validateHost refuses a server given as an address the policy refuses,
// or as "localhost"; other names are checked when they are dialled.
func (s Safety) validateHost(cluster, host string) []error {
	addr, err := netip.ParseAddr(host)
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		addr, err = netip.IPv6Loopback(), nil
	}
	if err != nil {
		return nil
	}
	if r := s.checkAddress(addr); r != nil {
		return []error{r.about(fmt.Sprintf("cluster %q has its server on", cluster))}
	}
	return nil
}

// RESTConfig parses a kubeconfig, validates its current context against s
// (Validate) and only then builds its rest.Config. It never runs a plugin:
// client-go creates exec and auth-provider authenticators lazily, and a
// validated configuration has neither (unless s allows them). Every
// connection of a client built from the result is dialled through s's
// address policy, which copies of the configuration keep. Its errors wrap
// ErrMissingKubeconfig, ErrInvalidKubeconfig or ErrUnsafeKubeconfig and
// never quote the kubeconfig.
func (s Safety) RESTConfig(kubeconfig []byte) (*rest.Config, error) {
	cfg, err := parseKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return s.ClientConfig(cfg)
}

// ClientConfig is RESTConfig for a kubeconfig already parsed: cfg's
// current context is validated against s, and only then is its rest.Config
// built, dialling through s's address policy. A provider whose clusters
// are described in another form (a ClusterProfile's access provider) puts
// the description in a clientcmdapi.Config to have it checked the same
// way.
func (s Safety) ClientConfig(cfg *clientcmdapi.Config) (*rest.Config, error) {
	rc, err := s.checkedConfig(cfg)
	if err != nil {
		return nil, err
	}
	s.guard(rc, newDialGuard(s))
	return rc, nil
}

// CheckServer resolves the host of the server URL and reports, with an
// error wrapping ErrUnsafeKubeconfig and ErrRefusedAddress, whether s
// refuses any address it stands for; it dials nothing. Clients of a
// configuration from RESTConfig or ClientConfig check every connection
// anyway: CheckServer is for what must not even start for a refused
// server, such as running a credential plugin for it.
func (s Safety) CheckServer(ctx context.Context, server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: malformed server URL", ErrInvalidKubeconfig)
	}
	_, err = newDialGuard(s).resolve(ctx, u.Hostname())
	return err
}

// guard makes every connection of rc go through g.
func (s Safety) guard(rc *rest.Config, g *dialGuard) {
	rc.Dial = g.DialContext
	if rc.Proxy == nil {
		g.envProxy = environmentProxy()
		rc.Proxy = g.proxy
	}
}

// checkedConfig validates cfg and builds its rest.Config, without the
// guard.
func (s Safety) checkedConfig(cfg *clientcmdapi.Config) (*rest.Config, error) {
	if err := s.Validate(cfg); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: cannot build a client configuration", ErrInvalidKubeconfig)
	}
	return rc, s.validateREST(rc)
}

// validateREST is a second line of defence on the built configuration.
func (s Safety) validateREST(rc *rest.Config) error {
	switch {
	case rc.ExecProvider != nil && !s.AllowExec,
		rc.AuthProvider != nil && !s.AllowAuthProvider,
		!s.AllowLocalFiles && (rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.BearerTokenFile != ""),
		rc.Proxy != nil && !s.AllowProxyURL,
		rc.Insecure && !s.AllowInsecureTLS,
		strings.HasPrefix(strings.ToLower(rc.Host), "http://") && !s.AllowPlainHTTP:
		return fmt.Errorf("%w: client configuration uses a refused feature", ErrUnsafeKubeconfig)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

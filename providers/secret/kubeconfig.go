package secret

import (
	"errors"
	"fmt"
	"net/url"
	"sort"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var (
	// ErrUnsafeKubeconfig means a kubeconfig would make the hub run a program
	// (an exec credential plugin), use an auth-provider plugin, or read a
	// file of the hub's file system, and the Options did not allow it.
	ErrUnsafeKubeconfig = errors.New("unsafe kubeconfig")

	// ErrInvalidKubeconfig means a kubeconfig cannot be parsed or does not
	// describe one usable cluster (no current context, a missing cluster or
	// user entry, a malformed server URL, credentials in the server URL).
	ErrInvalidKubeconfig = errors.New("invalid kubeconfig")

	// ErrMissingKubeconfig means a Secret has no data under the kubeconfig
	// key, or the data is empty.
	ErrMissingKubeconfig = errors.New("missing kubeconfig")

	// ErrDuplicateServer means a Secret's kubeconfig points at an API server
	// (same URL and CA) that another Secret's cluster holds already: the
	// same cluster is never engaged twice under two names.
	ErrDuplicateServer = errors.New("API server registered twice")
)

// Safety says which kubeconfig features a Provider accepts. The zero value
// accepts none of them: a kubeconfig must carry its credentials and
// certificates inline.
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
	if c.CertificateAuthority != "" && !s.AllowLocalFiles {
		problems = append(problems, fmt.Errorf("%w: cluster %q uses a local file (certificate-authority) "+
			"(set AllowLocalFiles to accept it)", ErrUnsafeKubeconfig, name))
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
	}
	return problems
}

// restConfig parses data, validates it against s and only then builds the
// rest.Config of its current context. It never runs a plugin: client-go
// creates exec and auth-provider authenticators lazily, and a validated
// config has neither (unless allowed).
func (s Safety) restConfig(data []byte) (*rest.Config, error) {
	cfg, err := parseKubeconfig(data)
	if err != nil {
		return nil, err
	}
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
		!s.AllowLocalFiles && (rc.CAFile != "" || rc.CertFile != "" || rc.KeyFile != "" || rc.BearerTokenFile != ""):
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

package main

import (
	"flag"
	"fmt"
	"net/netip"
	"strings"

	"github.com/fleetgraph/fleetgraph/providers/secret"
)

// kubeconfigOptions are the flags that relax what a spoke's kubeconfig
// Secret may make the hub do (provider secret). Every one is off by
// default, as secret.Safety's fields are.
type kubeconfigOptions struct {
	allowExec      bool
	allowProxy     bool
	allowInsecure  bool
	allowPlainHTTP bool
	allowLoopback  bool
	allowLinkLocal bool
	denyPrivate    bool
	allowedCIDRs   string
	deniedCIDRs    string
}

func (k *kubeconfigOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&k.allowExec, "allow-exec-kubeconfigs", false,
		"let spoke kubeconfigs run credential plugins and read local files (provider secret); off: such kubeconfigs are refused")
	fs.BoolVar(&k.allowProxy, "allow-kubeconfig-proxy", false,
		"let spoke kubeconfigs name a proxy (proxy-url); off: refused (the environment's HTTPS_PROXY is used either way)")
	fs.BoolVar(&k.allowInsecure, "allow-insecure-kubeconfigs", false,
		"let spoke kubeconfigs skip TLS verification (insecure-skip-tls-verify); off: refused")
	fs.BoolVar(&k.allowPlainHTTP, "allow-plain-http-kubeconfigs", false, "let spoke kubeconfigs use http:// servers; off: refused")
	fs.BoolVar(&k.allowLoopback, "allow-loopback-spokes", false,
		"let spoke servers be on loopback addresses (127.0.0.0/8, ::1), or names resolving to them; off: refused")
	fs.BoolVar(&k.allowLinkLocal, "allow-link-local-spokes", false,
		"let spoke servers be on link-local and cloud metadata addresses (169.254.0.0/16, fe80::/10); off: refused")
	fs.BoolVar(&k.denyPrivate, "deny-private-spokes", false,
		"refuse spoke servers on private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7); off: accepted")
	fs.StringVar(&k.allowedCIDRs, "spoke-allowed-cidrs", "",
		"comma-separated CIDRs whose addresses spoke servers may have whatever their kind (the longer of an allowed and a denied prefix decides)")
	fs.StringVar(&k.deniedCIDRs, "spoke-denied-cidrs", "",
		"comma-separated CIDRs whose addresses spoke servers may not have, e.g. 0.0.0.0/0,::/0 to admit --spoke-allowed-cidrs alone")
}

// safety returns the provider's Safety, or an error naming a malformed
// CIDR.
func (k *kubeconfigOptions) safety() (secret.Safety, error) {
	allowed, err := parseCIDRs("--spoke-allowed-cidrs", k.allowedCIDRs)
	if err != nil {
		return secret.Safety{}, err
	}
	denied, err := parseCIDRs("--spoke-denied-cidrs", k.deniedCIDRs)
	if err != nil {
		return secret.Safety{}, err
	}
	return secret.Safety{
		AllowExec: k.allowExec, AllowAuthProvider: k.allowExec, AllowLocalFiles: k.allowExec,
		AllowProxyURL: k.allowProxy, AllowInsecureTLS: k.allowInsecure, AllowPlainHTTP: k.allowPlainHTTP,
		AllowLoopback: k.allowLoopback, AllowLinkLocal: k.allowLinkLocal, DenyPrivate: k.denyPrivate,
		AllowedCIDRs: allowed, DeniedCIDRs: denied,
	}, nil
}

func parseCIDRs(flagName, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range strings.Split(list, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR: %w", flagName, c, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

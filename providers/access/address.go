package access

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// A kubeconfig Secret names the address the hub dials, with the hub's
// network position: whoever may write such a Secret could otherwise point
// the hub at its own loopback services, the cloud's metadata endpoint or
// any in-cluster service, and read the outcome in the Secret's events. So
// every address the hub dials for a kubeconfig is checked against the
// Safety's address policy, when it dials: a server given by name is
// resolved, every address it resolves to is checked, and the connection
// goes to a checked address, never to the name again. An answer that
// changes after the Secret was accepted (DNS rebinding) is checked the
// same way, on every new connection, for as long as the cluster is engaged.

// ErrRefusedAddress means the address a kubeconfig's server has, or
// resolves to, is one the Safety's address policy refuses. Errors that
// wrap it wrap ErrUnsafeKubeconfig too.
var ErrRefusedAddress = errors.New("address refused by the address policy")

// addressKind names the kinds of address the policy tells apart.
type addressKind int

const (
	kindPublic addressKind = iota
	kindPrivate
	kindLoopback
	kindLinkLocal
	kindMulticast
)

func (k addressKind) String() string {
	return [...]string{"a public", "a private", "a loopback", "a link-local or metadata", "a multicast or broadcast"}[k]
}

var (
	// sharedSpace is RFC 6598's carrier-grade NAT range, private in all
	// but name.
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	// thisNetwork (0.0.0.0/8): 0.0.0.0 reaches the local host.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	// nat64 embeds an IPv4 address that a NAT64 gateway reaches.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// metadata are cloud instance-metadata addresses outside the
	// link-local ranges (Alibaba Cloud, AWS over IPv6).
	metadata = []netip.Addr{netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("fd00:ec2::254")}
	// broadcast is the limited broadcast address.
	broadcast = netip.MustParseAddr("255.255.255.255")
)

// kindOf classifies addr, an IPv4-mapped or NAT64 address as the IPv4
// address it stands for.
func kindOf(addr netip.Addr) addressKind {
	addr = addr.Unmap()
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, m := range metadata {
		if addr == m {
			return kindLinkLocal
		}
	}
	switch {
	case addr.IsLoopback(), addr.IsUnspecified(), thisNetwork.Contains(addr):
		return kindLoopback
	case addr.IsMulticast(), addr == broadcast:
		return kindMulticast
	case addr.IsLinkLocalUnicast():
		return kindLinkLocal
	case addr.IsPrivate(), sharedSpace.Contains(addr):
		return kindPrivate
	}
	return kindPublic
}

// checkAddress returns nil when s lets the hub dial addr, else a
// *refusal naming the kind of address and the option that would accept
// it, never the address.
func (s Safety) checkAddress(addr netip.Addr) *refusal {
	addr = addr.Unmap()
	allowed, denied := longestMatch(s.AllowedCIDRs, addr), longestMatch(s.DeniedCIDRs, addr)
	switch {
	case denied >= 0 && denied >= allowed:
		return &refusal{what: "an address in DeniedCIDRs", option: "AllowedCIDRs (a longer prefix)"}
	case allowed >= 0:
		return nil
	}
	switch k := kindOf(addr); {
	case k == kindLoopback && !s.AllowLoopback:
		return &refusal{what: k.String() + " address", option: "AllowLoopback"}
	case k == kindLinkLocal && !s.AllowLinkLocal:
		return &refusal{what: k.String() + " address", option: "AllowLinkLocal"}
	case k == kindPrivate && s.DenyPrivate:
		return &refusal{what: k.String() + " address", option: "AllowedCIDRs, or leave DenyPrivate unset,"}
	case k == kindMulticast:
		return &refusal{what: k.String() + " address", option: "AllowedCIDRs"}
	}
	return nil
}

// refusal is an address the policy refuses. It wraps ErrUnsafeKubeconfig
// and ErrRefusedAddress.
type refusal struct {
	// subject says whose address it is, e.g. "the server's name resolves
	// to"; what is the kind of address; option would accept it.
	subject, what, option string
}

func (r *refusal) Error() string {
	subject := r.subject
	if subject == "" {
		subject = "the server is"
	}
	return fmt.Sprintf("%v: %v: %s %s (set %s to accept it)", ErrUnsafeKubeconfig, ErrRefusedAddress, subject, r.what, r.option)
}

func (r *refusal) Is(target error) bool {
	return target == ErrUnsafeKubeconfig || target == ErrRefusedAddress //nolint:errorlint // sentinels
}

// about returns r with its subject set.
func (r *refusal) about(subject string) *refusal {
	out := *r
	out.subject = subject
	return &out
}

// longestMatch returns the length of the longest prefix in prefixes that
// contains addr, or -1.
func longestMatch(prefixes []netip.Prefix, addr netip.Addr) int {
	best := -1
	for _, p := range prefixes {
		if p.Contains(addr) && p.Bits() > best {
			best = p.Bits()
		}
	}
	return best
}

// dialGuard dials for one cluster's client configuration, checking every
// address against the policy first. It is safe for concurrent use.
type dialGuard struct {
	safety Safety
	// lookup resolves a host name; dial connects to a checked address.
	// Tests replace them.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
	// envProxy is the proxy the hub's environment names for a request
	// (HTTPS_PROXY and the like), or nil when the kubeconfig names one.
	envProxy func(*http.Request) (*url.URL, error)
	// trusted are the host:port of the environment's proxies: the
	// embedder chose them, so they are dialled unchecked, and the server
	// behind them is checked instead (proxy).
	trusted sync.Map
}

// dialTimeout and dialKeepAlive are client-go's own defaults.
const (
	dialTimeout   = 30 * time.Second
	dialKeepAlive = 30 * time.Second
)

func newDialGuard(s Safety) *dialGuard {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	return &dialGuard{
		safety: s,
		lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		},
		dial: d.DialContext,
	}
}

// DialContext is a rest.Config's Dial: it resolves address's host, refuses
// it when any address it resolves to is refused, and otherwise connects to
// those addresses in turn.
func (g *dialGuard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if _, ok := g.trusted.Load(address); ok {
		return g.dial(ctx, network, address)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dialing: malformed address: %w", err)
	}
	addrs, err := g.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		conn, err := g.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// resolve returns the addresses host stands for, once every one of them
// passed the policy. A name resolving to a refused address is refused
// whole: which of its addresses a client would pick is not ours to guess.
func (g *dialGuard) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if r := g.safety.checkAddress(a); r != nil {
			return nil, r
		}
		return []netip.Addr{a}, nil
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if r := g.safety.checkAddress(a); r != nil {
			return nil, r.about("the server's name resolves to")
		}
	}
	return addrs, nil
}

// proxy is a rest.Config's Proxy when the kubeconfig names none: the
// environment's proxy, if it names one for the request, after the
// request's server passed the policy (the proxy, not the hub, will dial
// it).
func (g *dialGuard) proxy(req *http.Request) (*url.URL, error) {
	u, err := g.envProxy(req)
	if err != nil || u == nil {
		return u, err
	}
	if _, err := g.resolve(req.Context(), req.URL.Hostname()); err != nil {
		return nil, err
	}
	g.trusted.Store(proxyAddress(u), true)
	return u, nil
}

// proxyAddress is the host:port the transport dials for proxy u.
func proxyAddress(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(map[string]int{"https": 443, "socks5": 1080}[u.Scheme])
		if port == "0" {
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// environmentProxy is client-go's default proxy: the environment's, with
// CIDRs in NO_PROXY honoured.
func environmentProxy() func(*http.Request) (*url.URL, error) {
	return utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
}

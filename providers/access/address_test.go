package access

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func prefixes(t *testing.T, cidrs ...string) []netip.Prefix {
	t.Helper()
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

func server(url string) func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {
	return func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = url }
}

// Every way a kubeconfig can aim the hub somewhere it should not go is
// refused by default, as unsafe, naming the option that accepts it, and
// accepted once that option is set.
func TestKubeconfigsThatAimTheHubAnywhereAreRefusedUnlessAllowed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		refuse  Safety // refuses: the default unless set
		allow   Safety
		option  string
		address bool // refused by the address policy
	}{
		{name: "proxy-url", edit: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.ProxyURL = "http://203.0.113.99:3128" },
			allow: Safety{AllowProxyURL: true}, option: "AllowProxyURL"},
		{name: "insecure-skip-tls-verify", edit: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		}, allow: Safety{AllowInsecureTLS: true}, option: "AllowInsecureTLS"},
		{name: "plain http", edit: server("http://203.0.113.10:8080"), allow: Safety{AllowPlainHTTP: true}, option: "AllowPlainHTTP"},
		{name: "127.0.0.1", edit: server("https://127.0.0.1:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "127.1.2.3", edit: server("https://127.1.2.3:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "::1", edit: server("https://[::1]:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "IPv4-mapped loopback", edit: server("https://[::ffff:127.0.0.1]:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "localhost", edit: server("https://localhost:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "0.0.0.0", edit: server("https://0.0.0.0:6443"), allow: Safety{AllowLoopback: true}, option: "AllowLoopback", address: true},
		{name: "cloud metadata", edit: server("https://169.254.169.254"), allow: Safety{AllowLinkLocal: true}, option: "AllowLinkLocal", address: true},
		{name: "IPv6 link-local", edit: server("https://[fe80::1]:6443"), allow: Safety{AllowLinkLocal: true}, option: "AllowLinkLocal", address: true},
		{name: "metadata outside link-local", edit: server("https://100.100.100.200"), allow: Safety{AllowLinkLocal: true}, option: "AllowLinkLocal", address: true},
		{name: "NAT64 of metadata", edit: server("https://[64:ff9b::a9fe:a9fe]"), allow: Safety{AllowLinkLocal: true}, option: "AllowLinkLocal", address: true},
		{name: "private when denied", edit: server("https://10.96.0.1"), refuse: Safety{DenyPrivate: true},
			allow: Safety{DenyPrivate: true, AllowedCIDRs: prefixes(t, "10.96.0.0/12")}, option: "DenyPrivate", address: true},
		{name: "outside an allow-list", edit: server("https://198.51.100.7:6443"), refuse: Safety{DeniedCIDRs: prefixes(t, "0.0.0.0/0", "::/0"), AllowedCIDRs: prefixes(t, "203.0.113.0/24")},
			allow: Safety{DeniedCIDRs: prefixes(t, "0.0.0.0/0", "::/0"), AllowedCIDRs: prefixes(t, "198.51.100.0/24")}, option: "AllowedCIDRs", address: true},
		{name: "denied inside an allowed range", edit: server("https://10.1.2.3"), refuse: Safety{AllowedCIDRs: prefixes(t, "10.0.0.0/8"), DeniedCIDRs: prefixes(t, "10.1.2.0/24")},
			allow: Safety{AllowedCIDRs: prefixes(t, "10.0.0.0/8", "10.1.2.3/32"), DeniedCIDRs: prefixes(t, "10.1.2.0/24")}, option: "AllowedCIDRs", address: true},
		{name: "multicast", edit: server("https://224.0.0.1"), allow: Safety{AllowedCIDRs: prefixes(t, "224.0.0.0/4")}, option: "AllowedCIDRs", address: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := kubeconfig(t, tc.edit)

			_, err := tc.refuse.RESTConfig(data)
			require.ErrorIs(t, err, ErrUnsafeKubeconfig)
			assert.Equal(t, tc.address, errors.Is(err, ErrRefusedAddress))
			assert.Equal(t, ReasonUnsafeKubeconfig, ReasonFor(err))
			assert.Contains(t, err.Error(), tc.option)
			assertNoSecrets(t, err.Error())
			for _, host := range []string{"127.", "::1", "169.254", "10.96", "localhost", "203.0.113", "198.51"} {
				assert.NotContains(t, err.Error(), host, "the address is not quoted")
			}

			_, err = tc.allow.RESTConfig(data)
			assert.NoError(t, err)
		})
	}
}

func TestPublicAndPrivateServersAreAcceptedByDefault(t *testing.T) {
	for _, s := range []string{"https://203.0.113.10:6443", "https://10.0.0.5", "https://[fd12::5]:6443", "https://spoke.example.com"} {
		_, err := Safety{}.RESTConfig(kubeconfig(t, server(s)))
		assert.NoError(t, err, s)
	}
}

// fakeNet answers lookups from a table that a test may change, and records
// the addresses dialled instead of dialling them.
type fakeNet struct {
	mu      sync.Mutex
	answers map[string][]string
	dialled []string
}

func (f *fakeNet) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.Addr
	for _, a := range f.answers[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if out == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

func (f *fakeNet) dial(_ context.Context, _, address string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dialled = append(f.dialled, address)
	client, srv := net.Pipe()
	_ = srv.Close()
	return client, nil
}

func (f *fakeNet) answer(host string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answers == nil {
		f.answers = map[string][]string{}
	}
	f.answers[host] = addrs
}

func (f *fakeNet) dials() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dialled...)
}

func guardWith(s Safety, f *fakeNet) *dialGuard {
	g := newDialGuard(s)
	g.lookup, g.dial = f.lookup, f.dial
	return g
}

// A server given by name is checked by what the name resolves to when the
// hub dials, and the hub dials the checked address, never the name again.
func TestNamesAreCheckedByWhatTheyResolveTo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addrs  []string
		safety Safety
		option string // "" when allowed
	}{
		{name: "public", addrs: []string{"203.0.113.10"}},
		{name: "resolves to loopback", addrs: []string{"127.0.0.1"}, option: "AllowLoopback"},
		{name: "resolves to loopback, allowed", addrs: []string{"127.0.0.1"}, safety: Safety{AllowLoopback: true}},
		{name: "one of its answers is loopback", addrs: []string{"203.0.113.10", "::1"}, option: "AllowLoopback"},
		{name: "resolves to metadata", addrs: []string{"169.254.169.254"}, option: "AllowLinkLocal"},
		{name: "an in-cluster Service when private is denied", addrs: []string{"10.96.0.1"}, safety: Safety{DenyPrivate: true}, option: "DenyPrivate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeNet{}
			f.answer("spoke.test", tc.addrs...)
			conn, err := guardWith(tc.safety, f).DialContext(t.Context(), "tcp", "spoke.test:6443")
			if tc.option == "" {
				require.NoError(t, err)
				_ = conn.Close()
				ip, _, _ := net.SplitHostPort(f.dials()[0])
				assert.Equal(t, tc.addrs[0], ip, "the checked address is dialled")
				return
			}
			require.ErrorIs(t, err, ErrRefusedAddress)
			require.ErrorIs(t, err, ErrUnsafeKubeconfig)
			assert.Contains(t, err.Error(), "resolves to")
			assert.Contains(t, err.Error(), tc.option)
			assert.NotContains(t, err.Error(), "spoke.test")
			assert.NotContains(t, err.Error(), tc.addrs[len(tc.addrs)-1])
			assert.Empty(t, f.dials(), "nothing is dialled")
		})
	}
}

// A name whose answer changes after the cluster was accepted (DNS
// rebinding) is checked again on every connection.
func TestANameThatRebindsIsRefusedOnTheNextConnection(t *testing.T) {
	f := &fakeNet{}
	g := guardWith(Safety{}, f)
	f.answer("spoke.test", "203.0.113.10")
	conn, err := g.DialContext(t.Context(), "tcp", "spoke.test:443")
	require.NoError(t, err)
	_ = conn.Close()

	f.answer("spoke.test", "169.254.169.254")
	_, err = g.DialContext(t.Context(), "tcp", "spoke.test:443")
	require.ErrorIs(t, err, ErrRefusedAddress)

	f.answer("spoke.test", "127.0.0.1")
	_, err = g.DialContext(t.Context(), "tcp", "spoke.test:443")
	require.ErrorIs(t, err, ErrRefusedAddress)
	assert.Equal(t, []string{"203.0.113.10:443"}, f.dials(), "only the allowed answer was ever dialled")
}

// The environment's proxy is the embedder's choice: it is dialled even on
// loopback, and the server behind it is checked instead.
func TestTheServerBehindAnEnvironmentProxyIsChecked(t *testing.T) {
	f := &fakeNet{}
	g := guardWith(Safety{}, f)
	proxy, err := url.Parse("http://127.0.0.1:3128")
	require.NoError(t, err)
	g.envProxy = http.ProxyURL(proxy)
	f.answer("spoke.test", "203.0.113.10")
	f.answer("metadata.test", "169.254.169.254")

	req := httptest.NewRequest(http.MethodGet, "https://metadata.test/api", nil)
	_, err = g.proxy(req)
	require.ErrorIs(t, err, ErrRefusedAddress, "the proxy would reach a refused server")

	req = httptest.NewRequest(http.MethodGet, "https://spoke.test/api", nil)
	got, err := g.proxy(req)
	require.NoError(t, err)
	assert.Equal(t, proxy, got)
	conn, err := g.DialContext(t.Context(), "tcp", "127.0.0.1:3128")
	require.NoError(t, err, "the environment's proxy is dialled")
	_ = conn.Close()
}

// Clients built from the provider's configuration, and copies of it, dial
// through the policy: a refused address never sees a connection, and the
// refusal reaches the caller as ErrRefusedAddress.
func TestClientsOfTheConfigurationDialThroughThePolicy(t *testing.T) {
	var hits int
	var mu sync.Mutex
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	data := kubeconfig(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.Server = "https://spoke.test:" + port
		c.TLSServerName = "example.com" // in httptest's certificate
		c.CertificateAuthorityData = pemOf(srv.Certificate().Raw)
	})
	f := &fakeNet{}
	f.answer("spoke.test", "127.0.0.1")

	for _, s := range []Safety{{}, {AllowLoopback: true}} {
		cfg, err := parseKubeconfig(data)
		require.NoError(t, err)
		rc, err := s.checkedConfig(cfg)
		require.NoError(t, err)
		g := guardWith(s, f)
		g.dial = (&net.Dialer{}).DialContext
		s.guard(rc, g)

		err = Probe(t.Context(), rest.CopyConfig(rc), 10*time.Second)

		if s.AllowLoopback {
			require.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ErrRefusedAddress)
		assert.Contains(t, err.Error(), "AllowLoopback")
		mu.Lock()
		assert.Zero(t, hits, "the refused server never saw a request")
		mu.Unlock()
	}
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

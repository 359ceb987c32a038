package testing

import (
	"fmt"
	"net"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// Proxy is a TCP proxy on loopback in front of one address, typically a
// test cluster's API server, that can be made to hang: a hung proxy still
// accepts connections but forwards no byte in either direction, on new or
// existing connections, until Resume. To a client this is an API server
// that accepts connections and never answers, the failure that no
// connection error reveals and only a timeout ends. Unlike Cluster.Pause it
// hangs one client's view of the server, not the server: other clients
// that reach it directly go on working. TLS passes through unchanged, so a
// rest.Config only needs its Host pointed at the proxy (see Config).
//
// Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	resumed chan struct{} // closed while the proxy forwards
	closed  chan struct{}
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

// NewProxy starts a proxy on 127.0.0.1 (a free port) forwarding to target
// ("host:port"). Stop it with Close.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", target, err)
	}
	resumed := make(chan struct{})
	close(resumed)
	p := &Proxy{ln: ln, target: target, resumed: resumed, closed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// StartProxy starts a proxy in front of the API server cfg reaches and
// closes it on t.Cleanup. It returns the proxy and a copy of cfg that goes
// through it.
func StartProxy(t TestingT, cfg *rest.Config) (*Proxy, *rest.Config) {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("proxy: host %q: %v", cfg.Host, err)
	}
	p, err := NewProxy(u.Host)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, p.Config(cfg)
}

// Addr is the proxy's "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Config returns a copy of cfg whose Host is the proxy, keeping its scheme
// and credentials.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		out.Host = p.Addr()
		return out
	}
	u.Host = p.Addr()
	out.Host = u.String()
	return out
}

// Hang stops forwarding: connections are still accepted, and bytes already
// sent are held, but nothing reaches either side until Resume.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resumed:
		p.resumed = make(chan struct{})
	default: // hung already
	}
}

// Resume forwards again, delivering what was held.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resumed:
	default:
		close(p.resumed)
	}
}

// Reset closes every connection open through the proxy and goes on
// accepting new ones: to a client, the network dropped its connections, so
// its watches end and are opened again (and authorized again, which an
// open watch is not when its RBAC changes).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. It may be called more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	default:
	}
	close(p.closed)
	err := p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// pass blocks while the proxy is hung; false once it is closed.
func (p *Proxy) pass() bool {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	select {
	case <-resumed:
		return true
	case <-p.closed:
		return false
	}
}

// track records c to be closed by Close; false if the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		_ = c.Close()
		return false
	default:
		p.conns[c] = struct{}{}
		return true
	}
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve dials the target for one accepted connection, once the proxy is
// not hung, and copies both ways until either side ends.
func (p *Proxy) serve(client net.Conn) {
	if !p.pass() {
		p.untrack(client)
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(server) {
		p.untrack(client)
		return
	}
	var both sync.WaitGroup
	both.Go(func() { p.copy(server, client) })
	both.Go(func() { p.copy(client, server) })
	both.Wait()
	p.untrack(client, server)
}

// copy forwards src to dst, holding each chunk while the proxy is hung;
// when src ends, both connections are closed so the other direction ends.
func (p *Proxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or closed: the connection pair is done
		}
	}
}

package testing_test

import (
	"bufio"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fgtesting "github.com/fleetgraph/fleetgraph/testing"
)

// echo serves one line back per line received, on loopback.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line on c and returns what comes back within d, or ""
// and an error on timeout.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	return r.ReadString('\n')
}

// echoThroughProxy starts a proxy in front of an echo server and returns it
// with a connection through it that has answered once.
func echoThroughProxy(t *testing.T) (*fgtesting.Proxy, net.Conn, *bufio.Reader) {
	t.Helper()
	p, err := fgtesting.NewProxy(echo(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	got, err := roundTrip(c, r, "one", 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "one\n", got)
	return p, c, r
}

func TestProxyHangsAndResumes(t *testing.T) {
	p, c, r := echoThroughProxy(t)

	p.Hang()
	_, err := roundTrip(c, r, "two", 300*time.Millisecond)
	require.Error(t, err, "a hung proxy must not answer on an existing connection")
	fresh, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err, "a hung proxy still accepts connections")
	defer fresh.Close()
	fr := bufio.NewReader(fresh)
	_, err = roundTrip(fresh, fr, "three", 300*time.Millisecond)
	require.Error(t, err, "a hung proxy must not answer on a new connection")

	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "two\n", got, "what was held is delivered on resume")
	_ = fresh.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err = fr.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "three\n", got)
	require.NoError(t, p.Close())
}

func TestProxyResetDropsConnectionsAndAcceptsNewOnes(t *testing.T) {
	p, c, r := echoThroughProxy(t)

	p.Reset()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r.ReadString('\n')
	require.Error(t, err, "a reset must close the connection")
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the connection must end, not hang")

	fresh, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer fresh.Close()
	got, err := roundTrip(fresh, bufio.NewReader(fresh), "two", 10*time.Second)
	require.NoError(t, err, "the proxy accepts connections after a reset")
	require.Equal(t, "two\n", got)
}

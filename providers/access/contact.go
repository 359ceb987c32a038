package access

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// What a provider says about a server it could not use goes to the events
// of the object that described it (a Secret, a ClusterProfile, a Cluster)
// and to the hub's fleet status, where whoever may write that object reads
// it. So it is short and made of fixed phrases: never a response body, a
// status line the server chose, or a TLS or network library's message
// quoting what the server sent. The full error goes to the hub's log only.

// MaxReportedMessage bounds a message a provider reports on an object or
// in the fleet status, whatever made it (Truncate).
const MaxReportedMessage = 256

// Probe checks that the server of rc answers an authenticated discovery
// request (GET /api) within timeout, and closes its connections afterwards.
// Its error says what went wrong in a fixed phrase that is safe to show
// whoever described the cluster (connection refused, no answer within the
// timeout, a certificate not trusted, the status code of an answer; a
// refused address wraps ErrRefusedAddress); errors.Unwrap gives the cause,
// for the hub's log.
func Probe(ctx context.Context, rc *rest.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		return fmt.Errorf("%w: cannot build an HTTP client", ErrInvalidKubeconfig)
	}
	defer utilnet.CloseIdleConnectionsFor(httpClient.Transport)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(rc.Host, "/")+"/api", nil)
	if err != nil {
		return fmt.Errorf("%w: malformed server URL", ErrInvalidKubeconfig)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is known; keep the cause
		}
		return contactFailed(err, timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return answered(resp.StatusCode)
	}
	return nil
}

// contactError is a failed contact with a server: Error is the short,
// fixed account reported on the Secret; Unwrap is the cause, logged.
type contactError struct {
	short string
	cause error
}

func (e *contactError) Error() string { return e.short }
func (e *contactError) Unwrap() error { return e.cause }

// contactFailed describes err, a failed request to a server, in a fixed
// phrase; timeout is the request's bound.
func contactFailed(err error, timeout time.Duration) error {
	if errors.Is(err, ErrRefusedAddress) {
		var r *refusal
		if errors.As(err, &r) {
			return &contactError{short: r.Error(), cause: err}
		}
	}
	return &contactError{short: "contacting the server: " + contactPhrase(err, timeout), cause: err}
}

func contactPhrase(err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	var netErr net.Error
	var unknownAuthority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.As(err, &dnsErr):
		return "the server's name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &unknownAuthority):
		return "the server's certificate is not signed by the kubeconfig's certificate authority"
	case errors.As(err, &hostname):
		return "the server's certificate is not valid for its address"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid"
	case errors.As(err, &notTLS):
		return "the server does not speak TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection"
	}
	return "the server could not be reached"
}

// answered describes a discovery answer other than 200 by its code alone
// (the reason phrase is the server's to choose).
func answered(code int) error {
	text := http.StatusText(code)
	if text == "" {
		text = "an unknown status"
	}
	return &contactError{short: fmt.Sprintf("the server answered discovery with %d %s", code, text)}
}

// Truncate shortens s to at most n bytes, on a rune boundary, marking the
// cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

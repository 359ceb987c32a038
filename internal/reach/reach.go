// Package reach asks a cluster's API server whether it answers: the hub's
// prober asks every engaged cluster on an interval, and the clean-up after
// a cluster that left asks before each attempt. Errors name the cause,
// never credentials, and are bounded: they reach the fleet status on the
// RGD.
package reach

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// ReadyPath is what Probe asks by default.
const ReadyPath = "/readyz"

// Probe asks cl's API server for path (ReadyPath when empty), waiting at
// most timeout; any answer but 200 counts as not ready.
func Probe(ctx context.Context, cl cluster.Cluster, path string, timeout time.Duration) error {
	if path == "" {
		path = ReadyPath
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimSuffix(cl.GetConfig().Host, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("malformed server URL: %w", err)
	}
	resp, err := cl.GetHTTPClient().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer to %s within %s", path, timeout)
		}
		return &probeError{msg: fmt.Sprintf("probing %s: %s", path, shorten(err.Error(), maxProbeCause)), err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		// The code alone: the reason phrase is the server's to choose, and
		// this message reaches the fleet status.
		return fmt.Errorf("%s answered %d %s", path, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return nil
}

// maxProbeCause bounds the part of a probe's error that comes from the
// network or TLS library (a certificate's names, say).
const maxProbeCause = 160

// probeError is a failed probe: a short message, and the cause.
type probeError struct {
	msg string
	err error
}

func (e *probeError) Error() string { return e.msg }
func (e *probeError) Unwrap() error { return e.err }

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fgv1alpha1 "github.com/fleetgraph/fleetgraph/sdk/apis/fleetgraph/v1alpha1"
)

// An agent's credential on the hub is a bound token of its cluster's
// ServiceAccount. The first one (the platform's bootstrap token, short
// lived) is exchanged for one of TokenTTL, requested by the agent for
// itself (its role allows that and nothing else allows it), and each
// token is replaced at TokenRotation (80%) of its life. With Credential set, each new
// token is written into the agent's kubeconfig Secret, so that a restart
// starts from the newest.

// rotationRetry is how soon a failed rotation is tried again.
const rotationRetry = 10 * time.Second

// tokens holds the agent's current hub token.
type tokens struct {
	opts Options

	mu      sync.Mutex
	current string
	issued  time.Time // zero: unknown
	expires time.Time // zero: unknown
}

func newTokens(opts Options) (*tokens, error) {
	t := &tokens{opts: opts, current: opts.Hub.BearerToken}
	if opts.Hub.BearerTokenFile != "" && t.current == "" {
		return nil, fmt.Errorf("agent: a hub token file is not rotated; give the token itself (or a kubeconfig Secret)")
	}
	t.issued, t.expires = tokenTimes(t.current)
	return t, nil
}

// config is a copy of the hub's config whose requests carry the current
// token, whichever it is when they are sent.
func (t *tokens) config() *rest.Config {
	cfg := rest.CopyConfig(t.opts.Hub)
	if t.current == "" {
		return cfg // a client certificate, say: nothing to rotate
	}
	cfg.BearerToken = ""
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &bearer{t: t, next: rt} })
	return cfg
}

func (t *tokens) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.current
}

// due is when the current token is to be replaced.
func (t *tokens) due() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.issued.IsZero() || t.expires.IsZero() {
		return time.Time{} // unknown: at once
	}
	return t.issued.Add(time.Duration(float64(t.expires.Sub(t.issued)) * t.opts.TokenRotation))
}

// rotate replaces the token when it is due, until ctx ends.
func (t *tokens) rotate(ctx context.Context, hubClient, local client.Client) {
	if t.opts.TokenTTL < 0 || t.get() == "" {
		return
	}
	for {
		wait := time.Until(t.due())
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(wait, 0)):
		}
		if err := t.renew(ctx, hubClient, local); err != nil {
			t.opts.Logger.Info("hub token not rotated; retrying", "reason", err.Error(), "retry", rotationRetry.String())
			select {
			case <-ctx.Done():
				return
			case <-time.After(rotationRetry):
			}
		}
	}
}

// renew requests a new token for the agent's ServiceAccount and makes it
// current.
func (t *tokens) renew(ctx context.Context, hubClient, local client.Client) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: t.opts.namespace(), Name: fgv1alpha1.PullAgentName}}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptrInt64(int64(t.opts.TokenTTL / time.Second)),
	}}
	if err := hubClient.SubResource("token").Create(ctx, sa, req); err != nil {
		return fmt.Errorf("requesting a token: %w", err)
	}
	issued, expires := time.Now(), req.Status.ExpirationTimestamp.Time
	if t.opts.Credential.Name != "" {
		if err := t.keep(ctx, local, req.Status.Token); err != nil {
			return err // the old token stays current: a restart can use it
		}
	}
	t.mu.Lock()
	t.current, t.issued, t.expires = req.Status.Token, issued, expires
	t.mu.Unlock()
	t.opts.Logger.Info("hub token rotated", "expires", expires.UTC().Format(time.RFC3339))
	return nil
}

// keep writes token into the kubeconfig of the agent's Secret.
func (t *tokens) keep(ctx context.Context, local client.Client, token string) error {
	s := &corev1.Secret{}
	if err := local.Get(ctx, t.opts.Credential, s); err != nil {
		return fmt.Errorf("reading the hub kubeconfig Secret %s: %w", t.opts.Credential, err)
	}
	kc, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		return fmt.Errorf("decoding the hub kubeconfig of Secret %s: %w", t.opts.Credential, err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Token, ai.TokenFile = token, ""
	}
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encoding the hub kubeconfig: %w", err)
	}
	s.Data["kubeconfig"] = raw
	if err := local.Update(ctx, s); err != nil {
		return fmt.Errorf("writing the new token into Secret %s: %w", t.opts.Credential, err)
	}
	return nil
}

// bearer sets the current token on every request.
type bearer struct {
	t    *tokens
	next http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+b.t.get())
	return b.next.RoundTrip(r)
}

// tokenTimes reads when a JWT was issued and when it expires, without
// checking it (the hub does); zero times when it is not one.
func tokenTimes(token string) (time.Time, time.Time) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, time.Time{}
	}
	var claims struct {
		IssuedAt  int64 `json:"iat"`
		ExpiresAt int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.IssuedAt == 0 || claims.ExpiresAt == 0 {
		return time.Time{}, time.Time{}
	}
	return time.Unix(claims.IssuedAt, 0), time.Unix(claims.ExpiresAt, 0)
}

func ptrInt64(v int64) *int64 { return &v }

// WrappedRoundTripper lets client-go reach the transport below (to cancel
// a request that timed out).
func (b *bearer) WrappedRoundTripper() http.RoundTripper { return b.next }

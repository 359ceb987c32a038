package clusterprofile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
)

// CredentialPlugin is a KEP-5339 credential plugin that the platform
// allows: a program on the hub that prints a credential for the cluster
// described on its KUBERNETES_EXEC_INFO (client.authentication.k8s.io/v1
// ExecCredential, with spec.cluster from the profile's access provider).
type CredentialPlugin struct {
	// Name is the access provider name that ClusterProfiles list in
	// status.accessProviders[].name, such as "gke" or "secretreader".
	// Required.
	Name string
	// Command is the absolute path of the program. Relative names and
	// PATH lookups are refused (ErrInvalidOptions). Required.
	Command string
	// Args are the program's arguments. Defaults to none. A profile's
	// additional-args extension is ignored: a profile chooses nothing
	// about how a plugin runs.
	Args []string
	// Env is the program's whole environment besides KUBERNETES_EXEC_INFO:
	// the hub's own environment (its PATH, HOME, proxies, cloud
	// credentials) is not passed on. Defaults to none. A profile's
	// additional-envs extension is ignored.
	Env map[string]string
}

// validatePlugins reports what makes plugins unusable.
func validatePlugins(plugins []CredentialPlugin) error {
	var problems []error
	seen := map[string]bool{}
	for i, pl := range plugins {
		switch {
		case pl.Name == "":
			problems = append(problems, fmt.Errorf("%w: CredentialPlugins[%d] has no name", ErrInvalidOptions, i))
		case seen[pl.Name]:
			problems = append(problems, fmt.Errorf("%w: CredentialPlugins[%d]: a second plugin named %q", ErrInvalidOptions, i, pl.Name))
		}
		seen[pl.Name] = true
		if !filepath.IsAbs(pl.Command) {
			problems = append(problems, fmt.Errorf("%w: CredentialPlugins[%d] (%q): the command must be an absolute path",
				ErrInvalidOptions, i, pl.Name))
		}
	}
	return errors.Join(problems...)
}

// plugins runs credential plugins within bounds.
type plugins struct {
	timeout   time.Duration
	maxOutput int
}

// execInfoVersion is the ExecCredential version plugins are given and must
// answer in.
var execInfoVersion = clientauthv1.SchemeGroupVersion.String()

// stderrKept bounds what a plugin's standard error leaves in the hub's
// log.
const stderrKept = 512

// run runs pl for the cluster and returns the credential it printed. The
// program runs with pl's arguments and environment only, standard input
// closed, in "/", and is killed after the timeout; it fails when it
// writes more than maxOutput bytes. Errors wrap ErrPluginFailed and quote
// nothing the program wrote; stderr returns the start of its standard
// error, for the hub's log.
func (r plugins) run(ctx context.Context, pl CredentialPlugin, cluster *clientauthv1.Cluster) (_ *credential, stderr string, _ error) {
	if !filepath.IsAbs(pl.Command) {
		return nil, "", fmt.Errorf("%w: %q: the command is not an absolute path", ErrPluginFailed, pl.Name)
	}
	info, err := json.Marshal(&clientauthv1.ExecCredential{
		TypeMeta: metav1.TypeMeta{APIVersion: execInfoVersion, Kind: "ExecCredential"},
		Spec:     clientauthv1.ExecCredentialSpec{Cluster: cluster, Interactive: false},
	})
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q: encoding KUBERNETES_EXEC_INFO: %w", ErrPluginFailed, pl.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pl.Command, pl.Args...)
	cmd.Env = environment(pl.Env, info)
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second // a child holding the pipes open does not hold us
	out := &capped{max: r.maxOutput}
	errOut := &capped{max: stderrKept, quiet: true}
	cmd.Stdout, cmd.Stderr = out, errOut
	start := time.Now()
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, errOut.String(), fmt.Errorf("%w: %q did not finish within %s", ErrPluginFailed, pl.Name, r.timeout)
	case out.over:
		return nil, errOut.String(), fmt.Errorf("%w: %q wrote more than %d bytes", ErrPluginFailed, pl.Name, r.maxOutput)
	case err != nil:
		return nil, errOut.String(), fmt.Errorf("%w: %q: %s", ErrPluginFailed, pl.Name, exitPhrase(err))
	}
	cred, err := parseCredential(out.Bytes(), start)
	if err != nil {
		return nil, errOut.String(), fmt.Errorf("%w: %q: %w", ErrPluginFailed, pl.Name, err)
	}
	return cred, errOut.String(), nil
}

// environment is a plugin's whole environment, sorted.
func environment(env map[string]string, info []byte) []string {
	out := make([]string, 0, len(env)+1)
	for k, v := range env {
		if k != "KUBERNETES_EXEC_INFO" {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return append(out, "KUBERNETES_EXEC_INFO="+string(info))
}

// exitPhrase says how a plugin ended, without its output.
func exitPhrase(err error) string {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return fmt.Sprintf("exited with status %d", exitErr.ExitCode())
	}
	return "could not be run"
}

// parseCredential reads the ExecCredential a plugin printed.
func parseCredential(data []byte, obtained time.Time) (*credential, error) {
	ec := &clientauthv1.ExecCredential{}
	if err := json.Unmarshal(data, ec); err != nil {
		return nil, errors.New("its output is not an ExecCredential")
	}
	switch {
	case ec.APIVersion != execInfoVersion || ec.Kind != "ExecCredential":
		return nil, fmt.Errorf("its output is not a %s ExecCredential", execInfoVersion)
	case ec.Status == nil:
		return nil, errors.New("its ExecCredential has no status")
	case (ec.Status.ClientCertificateData == "") != (ec.Status.ClientKeyData == ""):
		return nil, errors.New("its ExecCredential has a client certificate without a key, or a key without a certificate")
	case ec.Status.Token == "" && ec.Status.ClientCertificateData == "":
		return nil, errors.New("its ExecCredential has neither a token nor a client certificate")
	}
	c := &credential{
		token:    ec.Status.Token,
		cert:     []byte(ec.Status.ClientCertificateData),
		key:      []byte(ec.Status.ClientKeyData),
		obtained: obtained,
	}
	if ec.Status.ExpirationTimestamp != nil {
		c.expires = ec.Status.ExpirationTimestamp.Time
	}
	return c, nil
}

// capped keeps what is written up to max bytes. Past that, it reports an
// error (the plugin's write fails) unless quiet, which drops the rest. It
// has only Write (no ReadFrom, which io.Copy would prefer), so that every
// byte passes the bound.
type capped struct {
	buf   bytes.Buffer
	max   int
	quiet bool
	over  bool
}

var errOutputTooLarge = errors.New("output too large")

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if len(p) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:max(room, 0)])
	if c.quiet {
		return len(p), nil
	}
	c.over = true
	return 0, errOutputTooLarge
}

func (c *capped) Bytes() []byte  { return c.buf.Bytes() }
func (c *capped) String() string { return c.buf.String() }

package clusterprofile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
)

// script writes an executable shell script and returns its absolute path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plugin")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700))
	return path
}

const okCredential = `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",` +
	`"status":{"token":"t0k3n","expirationTimestamp":"2999-01-01T00:00:00Z"}}`

func testPlugins() plugins { return plugins{timeout: 20 * time.Second, maxOutput: 4096} }

func TestAPluginGetsItsOwnEnvironmentAndTheClusterOnly(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	t.Setenv("HUB_SECRET_SENTINEL", "must-not-leak")
	pl := CredentialPlugin{Name: "p", Command: script(t, "env > "+out+"\necho '"+okCredential+"'"),
		Env: map[string]string{"PLUGIN_SETTING": "x"}}

	cred, _, err := testPlugins().run(t.Context(), pl, &clientauthv1.Cluster{Server: "https://203.0.113.10:6443"})

	require.NoError(t, err)
	assert.Equal(t, "t0k3n", cred.token)
	assert.Equal(t, 2999, cred.expires.Year())
	env, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.NotContains(t, string(env), "HUB_SECRET_SENTINEL", "the hub's environment is not passed on")
	assert.NotContains(t, string(env), "HOME=")
	assert.Contains(t, string(env), "PLUGIN_SETTING=x")
	var info clientauthv1.ExecCredential
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "KUBERNETES_EXEC_INFO="); ok {
			require.NoError(t, json.Unmarshal([]byte(v), &info))
		}
	}
	require.NotNil(t, info.Spec.Cluster)
	assert.Equal(t, "https://203.0.113.10:6443", info.Spec.Cluster.Server)
	assert.False(t, info.Spec.Interactive)
}

func TestAPluginIsBoundedInTimeAndOutput(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{name: "too slow", body: "sleep 30", want: "did not finish within 300ms"},
		{name: "too much output", body: "head -c 100000 /dev/zero", want: "wrote more than 4096 bytes"},
		{name: "failing", body: "echo 's3cr3t in stdout'; echo 'oops' >&2; exit 3", want: "exited with status 3"},
		{name: "not an ExecCredential", body: "echo 's3cr3t'", want: "not an ExecCredential"},
		{name: "no credential", body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}'`,
			want: "neither a token nor a client certificate"},
		{name: "certificate without key", body: `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",` +
			`"status":{"clientCertificateData":"c"}}'`, want: "without a key"},
		{name: "another version", body: `echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'`,
			want: "not a client.authentication.k8s.io/v1 ExecCredential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := plugins{timeout: 20 * time.Second, maxOutput: 4096} // a busy machine starts sh slowly
			if tc.name == "too slow" {
				r.timeout = 300 * time.Millisecond
			}
			start := time.Now()
			_, _, err := r.run(t.Context(), CredentialPlugin{Name: "p", Command: script(t, tc.body)}, &clientauthv1.Cluster{Server: "https://x"})
			require.ErrorIs(t, err, ErrPluginFailed)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cr3t", "nothing the plugin wrote is quoted")
			assert.Less(t, time.Since(start), r.timeout+10*time.Second, "bounded")
		})
	}
}

func TestAPluginMustBeAnAbsolutePath(t *testing.T) {
	_, _, err := testPlugins().run(t.Context(), CredentialPlugin{Name: "p", Command: "sh"}, &clientauthv1.Cluster{})
	require.ErrorIs(t, err, ErrPluginFailed)

	err = validatePlugins([]CredentialPlugin{{Name: "a", Command: "sh"}, {Name: "b", Command: "/bin/b"}, {Name: "b", Command: "/bin/c"}, {Command: "/x"}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.Contains(t, err.Error(), `CredentialPlugins[0] ("a"): the command must be an absolute path`)
	assert.Contains(t, err.Error(), `a second plugin named "b"`)
	assert.Contains(t, err.Error(), "CredentialPlugins[3] has no name")
	assert.NoError(t, validatePlugins([]CredentialPlugin{{Name: "a", Command: "/bin/a"}}))
}

func TestACredentialIsRenewedAtFourFifthsOfItsLife(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &credential{obtained: now, expires: now.Add(10 * time.Minute)}
	assert.Equal(t, now.Add(8*time.Minute), c.renewAt())
	assert.False(t, c.expired(now.Add(9*time.Minute)))
	assert.True(t, c.expired(now.Add(10*time.Minute)))
	assert.True(t, (&credential{obtained: now}).renewAt().IsZero(), "no expiry: never renewed")
	assert.Equal(t, minRenewal, renewal(&credential{obtained: now, expires: now.Add(time.Millisecond)}, now).RequeueAfter)
}

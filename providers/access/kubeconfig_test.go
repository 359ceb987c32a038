package access

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig returns a one-context kubeconfig with inline credentials,
// changed by edit.
func kubeconfig(t *testing.T, edit func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	c := &clientcmdapi.Cluster{Server: "https://203.0.113.10:6443", CertificateAuthorityData: []byte("ca")}
	u := &clientcmdapi.AuthInfo{Token: "s3cr3t-token"}
	if edit != nil {
		edit(c, u)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["spoke"] = c
	cfg.AuthInfos["admin"] = u
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "spoke", AuthInfo: "admin"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

func TestSafetyRefusesWhatWouldRunOrReadFiles(t *testing.T) {
	exec := func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Token = ""
		u.Exec = &clientcmdapi.ExecConfig{Command: "sh", Args: []string{"-c", "touch /tmp/ran"},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	authProvider := func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://idp"}}
	}
	caFile := func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.CertificateAuthorityData, c.CertificateAuthority = nil, "/etc/hub/ca.crt"
	}
	certFile := func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.ClientCertificate = "/etc/hub/tls.crt" }
	keyFile := func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.ClientKey = "/etc/hub/tls.key" }
	tokenFile := func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Token, u.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
	}

	for _, tc := range []struct {
		name    string
		edit    func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		safety  Safety
		wantErr error
		field   string
	}{
		{name: "inline credentials", edit: nil},
		{name: "exec plugin", edit: exec, wantErr: ErrUnsafeKubeconfig, field: "exec"},
		{name: "exec plugin allowed", edit: exec, safety: Safety{AllowExec: true}},
		{name: "auth-provider", edit: authProvider, wantErr: ErrUnsafeKubeconfig, field: "auth-provider"},
		{name: "auth-provider allowed", edit: authProvider, safety: Safety{AllowAuthProvider: true}},
		{name: "certificate-authority file", edit: caFile, wantErr: ErrUnsafeKubeconfig, field: "certificate-authority"},
		{name: "client-certificate file", edit: certFile, wantErr: ErrUnsafeKubeconfig, field: "client-certificate"},
		{name: "client-key file", edit: keyFile, wantErr: ErrUnsafeKubeconfig, field: "client-key"},
		{name: "tokenFile", edit: tokenFile, wantErr: ErrUnsafeKubeconfig, field: "tokenFile"},
		{name: "local files allowed", edit: func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			caFile(c, u)
			certFile(c, u)
			keyFile(c, u)
			tokenFile(c, u)
		}, safety: Safety{AllowLocalFiles: true}},
		{name: "exec allowed does not allow files", edit: func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			exec(c, u)
			caFile(c, u)
		}, safety: Safety{AllowExec: true}, wantErr: ErrUnsafeKubeconfig, field: "certificate-authority"},
		{name: "credentials in the server URL", edit: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.Server = "https://admin:hunter2@203.0.113.10:6443"
		}, wantErr: ErrInvalidKubeconfig},
		{name: "no server", edit: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "" },
			wantErr: ErrInvalidKubeconfig},
		{name: "server is not a URL", edit: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "ftp:/x" },
			wantErr: ErrInvalidKubeconfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseKubeconfig(kubeconfig(t, tc.edit))
			require.NoError(t, err)
			err = tc.safety.Validate(cfg)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), tc.field)
			assertNoSecrets(t, err.Error())
		})
	}
}

func TestSafetyChecksOnlyTheCurrentContext(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["spoke"] = &clientcmdapi.Cluster{Server: "https://203.0.113.10:6443"}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.AuthInfos["unused"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "sh"}}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "spoke", AuthInfo: "admin"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)

	parsed, err := parseKubeconfig(data)
	require.NoError(t, err)
	assert.NoError(t, Safety{}.Validate(parsed))
	assert.NotContains(t, parsed.AuthInfos, "unused", "entries outside the current context are dropped")
}

func TestRestConfigNeverRunsAnExecPlugin(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	data := kubeconfig(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "sh", Args: []string{"-c", "touch " + marker},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})

	_, err := Safety{}.RESTConfig(data)

	require.ErrorIs(t, err, ErrUnsafeKubeconfig)
	assert.NoFileExists(t, marker)
}

func TestRestConfigReportsBadInputWithoutQuotingIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr error
	}{
		{name: "empty", data: nil, wantErr: ErrMissingKubeconfig},
		{name: "garbage", data: []byte("s3cr3t-token: [unterminated"), wantErr: ErrInvalidKubeconfig},
		{name: "no current context", data: []byte("apiVersion: v1\nkind: Config\n"), wantErr: ErrInvalidKubeconfig},
		{name: "dangling current context", data: []byte("apiVersion: v1\nkind: Config\ncurrent-context: nope\n"),
			wantErr: ErrInvalidKubeconfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Safety{}.RESTConfig(tc.data)
			require.ErrorIs(t, err, tc.wantErr)
			assertNoSecrets(t, err.Error())
		})
	}
}

func TestRestConfigKeepsInlineCredentials(t *testing.T) {
	rc, err := Safety{}.RESTConfig(kubeconfig(t, nil))
	require.NoError(t, err)
	assert.Equal(t, "https://203.0.113.10:6443", rc.Host)
	assert.Equal(t, "s3cr3t-token", rc.BearerToken)
	assert.Nil(t, rc.ExecProvider)
}

func TestRestConfigWithAllowedTokenFileReadsIt(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("from-file"), 0o600))
	data := kubeconfig(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Token, u.TokenFile = "", tokenFile })

	_, err := Safety{}.RESTConfig(data)
	require.ErrorIs(t, err, ErrUnsafeKubeconfig)

	rc, err := Safety{AllowLocalFiles: true}.RESTConfig(data)
	require.NoError(t, err)
	assert.Equal(t, tokenFile, rc.BearerTokenFile)
}

func assertNoSecrets(t *testing.T, msg string) {
	t.Helper()
	for _, secret := range []string{"s3cr3t", "hunter2", "/etc/hub", "touch"} {
		assert.NotContains(t, msg, secret)
	}
}

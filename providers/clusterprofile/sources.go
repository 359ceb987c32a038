package clusterprofile

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ciav1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/providers/access"
	"github.com/fleetgraph/fleetgraph/providers/internal/engaged"
)

// execExtension is the cluster extension whose data a plugin receives as
// spec.cluster.config (client.authentication.k8s.io/exec, defined by the
// client authentication API).
const execExtension = "client.authentication.k8s.io/exec"

// accessProviders are a profile's access providers by name: the deprecated
// credentialProviders, overridden by accessProviders of the same name.
func accessProviders(cp *ciav1alpha1.ClusterProfile) map[string]ciav1alpha1.AccessProvider {
	out := map[string]ciav1alpha1.AccessProvider{}
	for _, ap := range cp.Status.CredentialProviders {
		out[ap.Name] = ap
	}
	for _, ap := range cp.Status.AccessProviders {
		out[ap.Name] = ap
	}
	return out
}

// pluginFor returns the first allowed plugin, in Options order, that cp
// offers an access provider for, or nil.
func (p *Provider) pluginFor(cp *ciav1alpha1.ClusterProfile) (*CredentialPlugin, ciav1alpha1.AccessProvider) {
	offered := accessProviders(cp)
	for i := range p.opts.CredentialPlugins {
		if ap, ok := offered[p.opts.CredentialPlugins[i].Name]; ok {
			return &p.opts.CredentialPlugins[i], ap
		}
	}
	return nil, ciav1alpha1.AccessProvider{}
}

// pluginState is what the provider keeps of a profile engaged with a
// plugin's credential.
type pluginState struct {
	cred   *credential
	tokens *tokens
}

// viaPlugin engages cp's cluster as its access provider ap describes it,
// with the credential plugin pl gives; a cluster engaged so already only
// has its credential renewed when due.
func (p *Provider) viaPlugin(ctx context.Context, cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName,
	labels map[string]string, pl CredentialPlugin, ap ciav1alpha1.AccessProvider) (ctrl.Result, error) {
	hash := pluginHash(pl, ap)
	if p.clusters.Refresh(name, hash, labels) {
		if st := p.credential(keyOf(cp)); st != nil {
			return p.renew(ctx, cp, name, labels, hash, pl, ap, st)
		}
	}
	cred, err := p.runPlugin(ctx, name, pl, ap)
	if err != nil {
		return p.pluginFailed(cp, name, err, true)
	}
	return p.engageWith(ctx, cp, name, labels, hash, ap, cred)
}

// renew runs the plugin again once st's credential is due: a new token
// replaces the old one in place; a new client certificate engages the
// cluster again. A failure while the credential is still valid is
// reported and retried, the cluster staying engaged; once it has expired,
// the cluster is disengaged.
func (p *Provider) renew(ctx context.Context, cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName,
	labels map[string]string, hash string, pl CredentialPlugin, ap ciav1alpha1.AccessProvider, st *pluginState) (ctrl.Result, error) {
	p.lock.Lock()
	old := st.cred
	p.lock.Unlock()
	at, now := old.renewAt(), p.now()
	switch {
	case at.IsZero():
		return ctrl.Result{}, nil
	case now.Before(at):
		return ctrl.Result{RequeueAfter: at.Sub(now)}, nil
	}
	cred, err := p.runPlugin(ctx, name, pl, ap)
	if err != nil {
		return p.pluginFailed(cp, name, err, old.expired(p.now()))
	}
	if !cred.sameCertificate(old) {
		return p.engageWith(ctx, cp, name, labels, hash, ap, cred)
	}
	p.lock.Lock()
	st.cred = cred
	p.lock.Unlock()
	st.tokens.set(cred.token)
	p.log.V(1).Info("Renewed the credential", "cluster", name)
	return renewal(cred, p.now()), nil
}

// errUnresolved means the server's name did not resolve when it was
// checked before a plugin ran.
var errUnresolved = errors.New("contacting the server: the server's name does not resolve")

// runPlugin checks the server ap describes (as access.Safety checks a
// kubeconfig Secret's, and resolving its name) and only then runs pl for
// it. Its errors wrap access's (the description or its address is
// refused), errUnresolved or ErrPluginFailed.
func (p *Provider) runPlugin(ctx context.Context, name multicluster.ClusterName, pl CredentialPlugin,
	ap ciav1alpha1.AccessProvider) (*credential, error) {
	rc, err := p.opts.Safety.ClientConfig(kubeconfigOf(ap))
	if err != nil {
		return nil, err
	}
	if err := p.opts.Safety.CheckServer(ctx, rc.Host); err != nil {
		if errors.Is(err, access.ErrUnsafeKubeconfig) {
			return nil, err
		}
		p.log.V(1).Info("Resolving the server failed", "cluster", name, "cause", err.Error())
		return nil, errUnresolved
	}
	cred, stderr, err := p.plugins.run(ctx, pl, execCluster(ap))
	if stderr != "" {
		p.log.V(1).Info("Credential plugin wrote to its standard error", "plugin", pl.Name, "cluster", name, "stderr", stderr)
	}
	return cred, err
}

// pluginFailed reports err, from runPlugin, on cp. A refused description
// disengages the cluster and waits for cp to change. Otherwise the error
// is returned, to retry with backoff, and the cluster is disengaged if
// disengage, else only warned about.
func (p *Provider) pluginFailed(cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName, err error, disengage bool) (ctrl.Result, error) {
	if errors.Is(err, access.ErrUnsafeKubeconfig) || errors.Is(err, access.ErrInvalidKubeconfig) {
		p.clusters.Refuse(cp, name, err)
		p.dropCredential(keyOf(cp))
		return ctrl.Result{}, nil
	}
	reason := ReasonCredentialPluginFailed
	if errors.Is(err, errUnresolved) {
		reason = access.ReasonUnreachable
	}
	if disengage {
		p.clusters.Fail(cp, name, reason, err)
		p.dropCredential(keyOf(cp))
	} else {
		p.clusters.Warn(cp, name, reason, err)
	}
	return ctrl.Result{}, fmt.Errorf("cluster %q (will retry): %w", name, err)
}

// engageWith engages cp's cluster with cred: its token through a holder
// that renewals update, its client certificate in the configuration.
func (p *Provider) engageWith(ctx context.Context, cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName,
	labels map[string]string, hash string, ap ciav1alpha1.AccessProvider, cred *credential) (ctrl.Result, error) {
	rc, err := p.opts.Safety.ClientConfig(kubeconfigOf(ap))
	if err != nil { // checked before the plugin ran: the same description
		p.clusters.Refuse(cp, name, err)
		return ctrl.Result{}, nil
	}
	st := &pluginState{cred: cred, tokens: &tokens{}}
	st.tokens.set(cred.token)
	rc = rest.CopyConfig(rc)
	rc.WrapTransport = st.tokens.wrap
	rc.CertData, rc.KeyData = cred.cert, cred.key
	p.setCredential(keyOf(cp), st)
	res, err := p.clusters.Connect(ctx, cp, name, engaged.Access{Config: rc, Hash: hash, Labels: labels})
	if err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	return renewal(cred, p.now()), nil
}

// viaSecret engages cp's cluster from the one kubeconfig Secret labelled
// for this consumer and cp, in cp's namespace.
func (p *Provider) viaSecret(ctx context.Context, cp *ciav1alpha1.ClusterProfile, name multicluster.ClusterName,
	labels map[string]string) (ctrl.Result, error) {
	secrets := &corev1.SecretList{}
	if err := p.hub.reader.List(ctx, secrets, client.InNamespace(cp.Namespace),
		client.MatchingLabels{ConsumerLabel: p.opts.ConsumerName, ProfileLabel: cp.Name}); err != nil {
		return ctrl.Result{}, err
	}
	p.dropCredential(keyOf(cp))
	if len(secrets.Items) != 1 {
		p.clusters.Fail(cp, name, ReasonNoCredentials, p.noCredentials(cp, len(secrets.Items)))
		return ctrl.Result{}, nil // until a profile or Secret changes
	}
	data := secrets.Items[0].Data[p.opts.SecretDataKey]
	hash := fmt.Sprintf("secret:%x", sha256.Sum256(data))
	if p.clusters.Refresh(name, hash, labels) {
		return ctrl.Result{}, nil
	}
	rc, err := p.opts.Safety.RESTConfig(data)
	if err != nil {
		p.clusters.Refuse(cp, name, fmt.Errorf("Secret %s: %w", secrets.Items[0].Name, err))
		return ctrl.Result{}, nil
	}
	return p.clusters.Connect(ctx, cp, name, engaged.Access{Config: rc, Hash: hash, Labels: labels})
}

// noCredentials says why cp has no credentials: the access providers it
// offers that no plugin is allowed for, and how many Secrets reach it.
func (p *Provider) noCredentials(cp *ciav1alpha1.ClusterProfile, secrets int) error {
	offered := make([]string, 0, len(accessProviders(cp)))
	for n := range accessProviders(cp) {
		offered = append(offered, fmt.Sprintf("%q", n))
	}
	slices.Sort(offered)
	plugins := "no access provider"
	if len(offered) > 0 {
		plugins = "access providers " + strings.Join(offered, ", ") + ", none of which Options.CredentialPlugins allows"
	}
	return fmt.Errorf("%w: the profile offers %s, and %d kubeconfig Secrets labelled %s=%s reach it (one must)",
		ErrNoCredentials, plugins, secrets, ConsumerLabel, p.opts.ConsumerName)
}

// kubeconfigOf describes ap's cluster as a kubeconfig without credentials,
// so that access.Safety checks it as it checks kubeconfig Secrets. The
// plugin's credential is added to the built configuration, never to this.
func kubeconfigOf(ap ciav1alpha1.AccessProvider) *clientcmdapi.Config {
	c := ap.Cluster
	cfg := clientcmdapi.NewConfig()
	entry := "access provider " + ap.Name
	cfg.Clusters[entry] = &clientcmdapi.Cluster{
		Server:                   c.Server,
		TLSServerName:            c.TLSServerName,
		InsecureSkipTLSVerify:    c.InsecureSkipTLSVerify,
		CertificateAuthority:     c.CertificateAuthority,
		CertificateAuthorityData: c.CertificateAuthorityData,
		ProxyURL:                 c.ProxyURL,
		DisableCompression:       c.DisableCompression,
	}
	cfg.AuthInfos[entry] = clientcmdapi.NewAuthInfo()
	cfg.Contexts[entry] = &clientcmdapi.Context{Cluster: entry, AuthInfo: entry}
	cfg.CurrentContext = entry
	return cfg
}

// execCluster is the spec.cluster a plugin receives for ap.
func execCluster(ap ciav1alpha1.AccessProvider) *clientauthv1.Cluster {
	c := ap.Cluster
	out := &clientauthv1.Cluster{
		Server:                   c.Server,
		TLSServerName:            c.TLSServerName,
		InsecureSkipTLSVerify:    c.InsecureSkipTLSVerify,
		CertificateAuthorityData: c.CertificateAuthorityData,
		ProxyURL:                 c.ProxyURL,
		DisableCompression:       c.DisableCompression,
	}
	for _, ext := range c.Extensions {
		if ext.Name == execExtension {
			out.Config = runtime.RawExtension{Raw: ext.Extension.Raw}
		}
	}
	return out
}

// pluginHash identifies a plugin engagement: the plugin and the cluster
// the access provider describes (with its extensions, which the plugin
// reads).
func pluginHash(pl CredentialPlugin, ap ciav1alpha1.AccessProvider) string {
	desc, _ := json.Marshal(struct {
		Plugin  CredentialPlugin
		Cluster any
	}{pl, ap.Cluster})
	return fmt.Sprintf("plugin:%x", sha256.Sum256(desc))
}

// renewal looks at the profile again when cred is due for renewal.
func renewal(cred *credential, now time.Time) ctrl.Result {
	at := cred.renewAt()
	if at.IsZero() {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(at.Sub(now), minRenewal)}
}

// minRenewal is the shortest wait before a credential is renewed, however
// short-lived the plugin made it.
const minRenewal = time.Second

func keyOf(cp *ciav1alpha1.ClusterProfile) types.NamespacedName {
	return types.NamespacedName{Namespace: cp.Namespace, Name: cp.Name}
}

func (p *Provider) credential(key types.NamespacedName) *pluginState {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.creds[key]
}

func (p *Provider) setCredential(key types.NamespacedName, st *pluginState) {
	p.lock.Lock()
	defer p.lock.Unlock()
	p.creds[key] = st
}

func (p *Provider) dropCredential(key types.NamespacedName) {
	p.lock.Lock()
	defer p.lock.Unlock()
	delete(p.creds, key)
}

package secret

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/fleetgraph/fleetgraph/internal/cacheopts"
)

// Event reasons recorded on kubeconfig Secrets.
const (
	ReasonEngaged           = "ClusterEngaged"
	ReasonUnsafeKubeconfig  = "UnsafeKubeconfig"
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	ReasonMissingKubeconfig = "MissingKubeconfig"
	ReasonUnreachable       = "ClusterUnreachable"
	ReasonDuplicateName     = "DuplicateClusterName"
	ReasonEngageFailed      = "EngageFailed"
	ReasonDuplicateServer   = "DuplicateServer"
)

const (
	// disengageTimeout bounds the wait for a disengaged cluster to stop.
	disengageTimeout = 30 * time.Second
	// duplicateRetry is how often a Secret whose cluster name is taken is
	// looked at again.
	duplicateRetry = 30 * time.Second
)

// Reconcile brings the cluster of one kubeconfig Secret in line with it.
// Problems with the kubeconfig are reported on the Secret and not retried
// (a change to the Secret retries); an unreachable server is retried with
// backoff.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := p.waitStarted(ctx); err != nil {
		return ctrl.Result{}, err
	}
	s := &corev1.Secret{}
	if err := p.hub.reader.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			p.forgetSecret(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if s.DeletionTimestamp != nil {
		p.forgetSecret(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	owner, released, ok := p.claims.claim(req.NamespacedName, clusterName(s))
	for _, name := range released {
		p.disengage(name) // the Secret was re-annotated with another name
	}
	if !ok {
		p.report(s, p.log.WithValues("secret", req.String()), ReasonDuplicateName,
			fmt.Errorf("cluster name %q is already used by Secret %s", clusterName(s), owner))
		return ctrl.Result{RequeueAfter: duplicateRetry}, nil // until the other Secret goes
	}
	return p.reconcileSecret(ctx, s)
}

func (p *Provider) reconcileSecret(ctx context.Context, s *corev1.Secret) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	name := clusterName(s)
	log := p.log.WithValues("secret", key.String(), "cluster", name)
	data := s.Data[p.opts.DataKey]
	hash := fmt.Sprintf("%x", sha256.Sum256(data))
	if p.updateIfCurrent(name, hash, clusterLabels(s)) {
		return ctrl.Result{}, nil
	}
	rc, err := p.opts.Safety.restConfig(data)
	if err != nil {
		p.disengage(name)
		p.servers.release(name)
		p.report(s, log, reasonFor(err), err)
		return ctrl.Result{}, nil
	}
	if owner, ok := p.servers.claim(serverIdentity(rc), name); !ok {
		p.disengage(name)
		p.report(s, log, ReasonDuplicateServer, fmt.Errorf("%w: its server is engaged already as cluster %q", ErrDuplicateServer, owner))
		return ctrl.Result{RequeueAfter: duplicateRetry}, nil // until the other Secret goes
	}
	return ctrl.Result{}, p.connect(ctx, s, log, engagement{hash: hash, labels: clusterLabels(s)}, p.withLimits(rc))
}

// connect checks the server, creates the cluster and engages it in place of
// any previous one of the same name.
func (p *Provider) connect(ctx context.Context, s *corev1.Secret, log logr.Logger, e engagement, rc *rest.Config) error {
	name := clusterName(s)
	if err := p.probe(ctx, rc); err != nil {
		p.disengage(name)
		if cause := errors.Unwrap(err); cause != nil {
			log.V(1).Info("Contacting the server failed", "cause", cause.Error())
		}
		if errors.Is(err, ErrRefusedAddress) {
			// Refused by the policy: waits for the Secret to change.
			p.report(s, log, ReasonUnsafeKubeconfig, err)
			return nil
		}
		p.report(s, log, ReasonUnreachable, err)
		return fmt.Errorf("cluster %q is not reachable (will retry): %w", name, err)
	}
	httpClient, err := rest.HTTPClientFor(rc)
	if err != nil {
		p.report(s, log, ReasonInvalidKubeconfig, fmt.Errorf("%w: cannot build an HTTP client", ErrInvalidKubeconfig))
		return nil
	}
	opts := append([]cluster.Option{func(o *cluster.Options) { o.HTTPClient = httpClient }, cacheopts.TrimCache, cacheopts.ReportWatchErrors},
		p.opts.ClusterOptions...)
	cl, err := cluster.New(rc, opts...)
	if err != nil {
		p.report(s, log, ReasonEngageFailed, err)
		return nil
	}
	e.tc = &trackedCluster{Cluster: cl, http: httpClient, done: make(chan struct{})}
	e.tc.stopped = func() { p.dropIfCurrent(name, e.tc) }
	if err := p.engage(name, &e); err != nil {
		p.report(s, log, ReasonEngageFailed, err)
		return fmt.Errorf("engaging cluster %q: %w", name, err)
	}
	log.Info("Engaged cluster")
	p.failures.clear(name)
	p.hub.recorder.Eventf(s, nil, corev1.EventTypeNormal, ReasonEngaged, "Engage", "cluster %q engaged", name)
	return nil
}

// probe checks that the server answers an authenticated discovery request.
// It closes its connections afterwards. Its errors are *contactError: a
// fixed phrase, with the cause to log.
func (p *Provider) probe(ctx context.Context, rc *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.ConnectTimeout)
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
		return contactFailed(err, p.opts.ConnectTimeout)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return answered(resp.StatusCode)
	}
	return nil
}

// engage registers e under name, replacing (and first stopping) any
// previous engagement of that name, then starts, syncs and engages it. The
// name stays registered throughout, so that a rotation never looks like a
// departure to ClusterNames.
func (p *Provider) engage(name multicluster.ClusterName, e *engagement) error {
	p.lock.Lock()
	old := p.byName[name]
	p.gen++
	e.key = multicluster.ClusterName(fmt.Sprintf("%s#%d", name, p.gen))
	p.byName[name] = e
	p.lock.Unlock()
	if old != nil {
		p.stop(name, old)
	}
	if err := p.clusters.Add(p.ctx, e.key, e.tc, renamed{aware: p.aware, name: name}); err != nil {
		p.dropIfCurrent(name, e.tc)
		p.stop(name, e)
		return err
	}
	return nil
}

// disengage cancels the engagement of the cluster called name, if any, and
// waits until it has stopped.
func (p *Provider) disengage(name multicluster.ClusterName) {
	p.lock.Lock()
	e, ok := p.byName[name]
	if ok {
		delete(p.byName, name)
	}
	p.lock.Unlock()
	if ok {
		p.stop(name, e)
	}
}

// stop cancels e's context, waits until its cluster has stopped and closes
// its idle connections.
func (p *Provider) stop(name multicluster.ClusterName, e *engagement) {
	p.clusters.Remove(e.key)
	select {
	case <-e.tc.done:
	case <-time.After(disengageTimeout):
		p.log.Info("Cluster did not stop in time after disengaging", "cluster", name)
	}
	utilnet.CloseIdleConnectionsFor(e.tc.http.Transport)
	p.log.Info("Disengaged cluster", "cluster", name)
}

// forgetSecret disengages the cluster of a Secret that is gone and frees
// its name.
func (p *Provider) forgetSecret(key types.NamespacedName) {
	for _, name := range p.claims.release(key) {
		p.disengage(name)
		p.servers.release(name)
		p.failures.clear(name)
	}
}

// updateIfCurrent refreshes the labels of the cluster called name and
// reports true when it is engaged with the kubeconfig of that hash. When
// the labels changed, it tells NotifyLabelsChanged's funcs.
func (p *Provider) updateIfCurrent(name multicluster.ClusterName, hash string, labels map[string]string) bool {
	p.lock.Lock()
	e, ok := p.byName[name]
	if !ok || e.hash != hash {
		p.lock.Unlock()
		return false
	}
	changed := !maps.Equal(e.labels, labels)
	e.labels = labels
	notify := p.relabelled
	p.lock.Unlock()
	if changed {
		for _, f := range notify {
			f(name)
		}
	}
	return true
}

// report logs err and records it as a Warning Event on the Secret. Errors
// built in this package never carry credentials, and what is reported is
// at most maxReportedMessage long, whatever err says.
func (p *Provider) report(s *corev1.Secret, log logr.Logger, reason string, err error) {
	msg := truncate(err.Error(), maxReportedMessage)
	log.Info("Kubeconfig Secret skipped", "reason", reason, "error", msg)
	p.failures.set(clusterName(s), reason+": "+msg)
	p.hub.recorder.Eventf(s, nil, corev1.EventTypeWarning, reason, "Engage", "%s", msg)
}

func reasonFor(err error) string {
	switch {
	case errors.Is(err, ErrMissingKubeconfig):
		return ReasonMissingKubeconfig
	case errors.Is(err, ErrUnsafeKubeconfig):
		return ReasonUnsafeKubeconfig
	default:
		return ReasonInvalidKubeconfig
	}
}

// dropIfCurrent forgets the cluster called name if tc is still its
// engagement: tc stopped on its own (its cache failed), not because it was
// disengaged or replaced.
func (p *Provider) dropIfCurrent(name multicluster.ClusterName, tc *trackedCluster) {
	p.lock.Lock()
	defer p.lock.Unlock()
	if e, ok := p.byName[name]; ok && e.tc == tc {
		delete(p.byName, name)
		p.log.Info("Cluster stopped; it is engaged again when its Secret changes", "cluster", name)
	}
}

// trackedCluster is a cluster whose Start reports when it has returned.
type trackedCluster struct {
	cluster.Cluster
	http    *http.Client
	done    chan struct{}
	stopped func()
}

// Start runs the cluster until ctx is done, then calls stopped and closes
// done.
func (c *trackedCluster) Start(ctx context.Context) error {
	defer close(c.done)
	defer c.stopped()
	return c.Cluster.Start(ctx)
}

// renamed engages clusters under their public name rather than their key.
type renamed struct {
	aware multicluster.Aware
	name  multicluster.ClusterName
}

func (r renamed) Engage(ctx context.Context, _ multicluster.ClusterName, cl cluster.Cluster) error {
	return r.aware.Engage(ctx, r.name, cl)
}

package sdk

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fleetgraph/fleetgraph/internal/hub"
	"github.com/fleetgraph/fleetgraph/sdk/graph"
)

// APIExportOptions serve graphs through a kcp APIExport instead of a CRD
// per cluster. Use it with providers/kcp.NewAPIExport for the same export:
// the engaged clusters are then the workspaces that bind it, seen through
// its virtual workspace.
//
// For each graph, the hub converts the generated CRD into an immutable
// APIResourceSchema named v<hash>.<plural>.<group> in the provider
// workspace, lists it in the APIExport (created when missing) and adds a
// permission claim (verbs hub.ClaimVerbs, no identity hash: kinds built into
// kcp workspaces, such as ConfigMaps and Secrets) for every child kind. A
// changed schema is a new APIResourceSchema; the export switches to it only
// when the change is compatible, or the RGD allows breaking changes, so the
// previous schema keeps serving until then. A bound workspace serves the
// graph once its APIBinding accepts every claim the graph needs and is bound
// to the published schema; one that does not accept the claims is reported
// Incompatible (hub.ErrClaimsNotAccepted) in FleetStatus and status.fleet.
// Nothing is applied to consumer workspaces, and no admission policy is
// installed (Options.DisableAdmissionPolicy is implied).
type APIExportOptions struct {
	// Config reaches the provider workspace that holds the APIExport and
	// the APIResourceSchemas (<server>/clusters/<path>), with rights to
	// create APIResourceSchemas and create and update the APIExport.
	// Required.
	Config *rest.Config
	// Name is the APIExport's name. Required.
	Name string
}

// apiExportProbePath is what the prober asks a consumer through the
// virtual workspace, which serves discovery but no /readyz.
const apiExportProbePath = "/apis"

// errAPIExportOptions is returned by NewHub for an incomplete
// Options.APIExport.
var errAPIExportOptions = errors.New("fleetgraph: Options.APIExport needs Config and Name")

// setupExporter makes the exporter for Options.APIExport, if set.
func (h *Hub) setupExporter() error {
	o := h.opts.APIExport
	if o == nil {
		return nil
	}
	if o.Config == nil || o.Name == "" {
		return errAPIExportOptions
	}
	e, err := hub.NewExporter(o.Config, hub.ExporterOptions{Name: o.Name, AllowBreaking: h.allowsBreaking})
	if err != nil {
		return err
	}
	h.exporter = e
	return nil
}

// exportGate is the gate in APIExport mode: publish, then check the
// consumer's binding.
func (h *Hub) exportGate(ctx context.Context, c hub.Cluster, g *graph.Graph) error {
	return h.fanOut.EnsureExported(ctx, c, g, h.exporter)
}

// publishRetry bounds the wait between two attempts to publish a graph.
const (
	publishRetry    = time.Second
	publishRetryMax = time.Minute
)

// publish puts g's schema in the export in the background, retried with
// backoff, so that consumers can bind to it before any of them is
// engaged. It ends when g is published, refused (a breaking change, or a
// schema of that name we do not own: the gate of every cluster reports it),
// replaced or removed, or the hub stops.
func (h *Hub) publish(g *graph.Graph) {
	if h.exporter == nil {
		return
	}
	// Counted under h.mu, where stopRemovals ends h.ctx, as departed does.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return
	}
	h.departures.Go(func() {
		delay := publishRetry
		for h.ctx.Err() == nil && h.serves(g) {
			pub, err := h.exporter.Publish(h.ctx, g)
			if err == nil {
				h.opts.Logger.Info("graph published", "graph", g.Name, "apiExport", h.exporter.Name(), "schema", pub.Schema)
				return
			}
			h.opts.Logger.Info("graph not published", "graph", g.Name, "apiExport", h.exporter.Name(), "reason", err.Error())
			if errors.Is(err, hub.ErrIncompatible) || errors.Is(err, hub.ErrConflict) {
				return
			}
			select {
			case <-h.ctx.Done():
			case <-time.After(delay):
			}
			delay = min(2*delay, publishRetryMax)
		}
	})
}

// serves reports whether g is the graph registered under its name.
func (h *Hub) serves(g *graph.Graph) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	reg := h.graphs[g.Name]
	return reg != nil && reg.graph == g
}

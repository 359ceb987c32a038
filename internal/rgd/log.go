package rgd

import (
	"context"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fleetgraph/fleetgraph/internal/retrylog"
	"github.com/fleetgraph/fleetgraph/sdk/apis/v1alpha1"
)

// controller-runtime logs "Reconciler error" at error level, with a stack
// trace under zap's production config, on every retry of a failing
// request. The RGD controller's logger passes it at error level when the
// RGD's error starts or changes, and repeats at V(1) (see
// internal/retrylog); the error metrics and the backoff are unchanged.

// reconcilerError is the message controller-runtime logs a returned error
// with.
const reconcilerError = "Reconciler error"

// rgdFailures remembers the last error logged per RGD name.
var rgdFailures retrylog.Memory[string]

// rgdLogConstructor is the controller's LogConstructor: the values
// controller-runtime's default gives, and the RGD's failures deduplicated.
func rgdLogConstructor(mgr manager.Manager, name string) func(*reconcile.Request) logr.Logger {
	base := mgr.GetLogger().WithValues("controller", name, "controllerGroup", v1alpha1.GroupVersion.Group,
		"controllerKind", "ResourceGraphDefinition")
	return func(req *reconcile.Request) logr.Logger {
		if req == nil || base.GetSink() == nil {
			return base
		}
		l := base.WithValues("ResourceGraphDefinition", req.Name, "name", req.Name)
		return logr.New(quietSink{LogSink: l.GetSink(), key: req.Name})
	}
}

// quietSink downgrades a repeated "Reconciler error" of one RGD to V(1).
type quietSink struct {
	logr.LogSink
	key string
}

var _ logr.LogSink = quietSink{}

// Init does nothing: the wrapped sink was initialised by its own logger.
func (s quietSink) Init(logr.RuntimeInfo) {}

func (s quietSink) Error(err error, msg string, kv ...any) {
	if msg != reconcilerError || err == nil || rgdFailures.Failed(s.key, err.Error(), false) {
		s.LogSink.Error(err, msg, kv...)
		return
	}
	if s.LogSink.Enabled(1) {
		s.LogSink.Info(1, reconcilerError+" again (logged at error level when it changes)", append(kv, "error", err.Error())...)
	}
}

func (s quietSink) WithValues(kv ...any) logr.LogSink {
	return quietSink{LogSink: s.LogSink.WithValues(kv...), key: s.key}
}

func (s quietSink) WithName(name string) logr.LogSink {
	return quietSink{LogSink: s.LogSink.WithName(name), key: s.key}
}

// forgetting forgets an RGD's last error once it reconciles: its next
// failure is news again.
type forgetting struct{ *Reconciler }

func (r forgetting) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.Reconciler.Reconcile(ctx, req)
	if err == nil {
		rgdFailures.Succeeded(req.Name)
	}
	return res, err
}

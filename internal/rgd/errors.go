package rgd

import "errors"

// Errors a Registry returns when a graph cannot be registered because
// another registration holds what it needs. Match them with errors.Is.
var (
	// ErrNameTaken: a graph of that name is registered from the other
	// source (Go's RegisterGraph or an RGD object on the hub). Only the
	// source that registered a graph may replace or remove it.
	ErrNameTaken = errors.New("graph name is registered from another source")
	// ErrKindTaken: the graph's instance kind (group and kind) is already
	// served by another registered graph. The first keeps serving.
	ErrKindTaken = errors.New("kind is served by another graph")
	// ErrRemoving: a graph of that name is still being removed (its
	// cleanup on the spokes has not finished). Retry later.
	ErrRemoving = errors.New("graph is still being removed")
	// ErrCompiling: the graph's compile is still running; the Registry
	// sends its name on the RGD controller's Changed channel when it ends.
	ErrCompiling = errors.New("graph is still being compiled")
)

// isRefusal tells an RGD the hub refuses (reported in its status) from a
// failure to serve it (retried).
func isRefusal(err error) bool {
	return errors.Is(err, ErrNameTaken) || errors.Is(err, ErrKindTaken)
}

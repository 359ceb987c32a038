package secret

import "github.com/fleetgraph/fleetgraph/providers/access"

// Safety says which kubeconfig features the Provider accepts and which
// addresses it lets the hub dial; the zero value accepts no feature and
// refuses loopback, link-local and metadata addresses. It is the one
// policy of every fleetgraph provider: see access.Safety for its fields.
type Safety = access.Safety

// The errors of a kubeconfig Secret that cannot be used, as access
// defines them; match them with errors.Is.
var (
	// ErrUnsafeKubeconfig: see access.ErrUnsafeKubeconfig.
	ErrUnsafeKubeconfig = access.ErrUnsafeKubeconfig
	// ErrInvalidKubeconfig: see access.ErrInvalidKubeconfig.
	ErrInvalidKubeconfig = access.ErrInvalidKubeconfig
	// ErrMissingKubeconfig: see access.ErrMissingKubeconfig.
	ErrMissingKubeconfig = access.ErrMissingKubeconfig
	// ErrDuplicateServer: see access.ErrDuplicateServer.
	ErrDuplicateServer = access.ErrDuplicateServer
	// ErrRefusedAddress: see access.ErrRefusedAddress.
	ErrRefusedAddress = access.ErrRefusedAddress
)

// Event reasons recorded on kubeconfig Secrets; access documents each.
const (
	ReasonEngaged           = access.ReasonEngaged
	ReasonUnsafeKubeconfig  = access.ReasonUnsafeKubeconfig
	ReasonInvalidKubeconfig = access.ReasonInvalidKubeconfig
	ReasonMissingKubeconfig = access.ReasonMissingKubeconfig
	ReasonUnreachable       = access.ReasonUnreachable
	ReasonDuplicateName     = access.ReasonDuplicateName
	ReasonEngageFailed      = access.ReasonEngageFailed
	ReasonDuplicateServer   = access.ReasonDuplicateServer
)

package secret_test

import (
	"github.com/fleetgraph/fleetgraph/providers/secret"
	"github.com/fleetgraph/fleetgraph/sdk"
)

// The hub asks the provider whether a disengaged cluster is still
// registered before it cleans up after it (sdk.ClusterRegistry).
var _ sdk.ClusterRegistry = &secret.Provider{}

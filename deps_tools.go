//go:build tools

// Temporary: pins the modules the packages under construction will import, so
// that go.sum is complete before they land. Removed once they import these.
package fleetgraph

import (
	_ "github.com/google/cel-go/cel"
	_ "github.com/kcp-dev/logicalcluster/v3"
	_ "github.com/kcp-dev/multicluster-provider/apiexport"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apiserver/pkg/cel/common"
	_ "k8s.io/apiserver/pkg/cel/library"
	_ "k8s.io/client-go/discovery"
	_ "sigs.k8s.io/controller-runtime/pkg/client/fake"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/multicluster-runtime/pkg/builder"
	_ "sigs.k8s.io/multicluster-runtime/pkg/clusters"
	_ "sigs.k8s.io/multicluster-runtime/pkg/manager"
	_ "sigs.k8s.io/multicluster-runtime/providers/clusters"
	_ "sigs.k8s.io/multicluster-runtime/providers/kubeconfig"
)

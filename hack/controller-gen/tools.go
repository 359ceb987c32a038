//go:build tools

// Package tools pins controller-gen, which hack/codegen.sh builds from this
// module so that its dependencies never enter the SDK's go.mod.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"

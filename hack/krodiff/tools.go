//go:build tools

// This file keeps kro's controller (github.com/kubernetes-sigs/kro/cmd/controller)
// in go.mod and go.sum so that build-kro.sh builds it with this module's
// pinned dependencies.
package krodiff

import _ "github.com/kubernetes-sigs/kro/cmd/controller"

//go:build tools

// This file keeps github.com/kyverno/chainsaw in go.mod so that make e2e-kro
// builds it with this module's pinned dependencies.
package tools

import _ "github.com/kyverno/chainsaw"

//go:build tools

// This file keeps github.com/kcp-dev/kcp/cmd/kcp in go.mod so that build.sh
// builds it with this module's pinned dependencies.
package tools

import _ "github.com/kcp-dev/kcp/cmd/kcp"

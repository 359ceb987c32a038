//go:build tools

// This file keeps k8s.io/kubernetes/cmd/kube-apiserver in go.mod so that
// build.sh can build it with this module's pinned dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"

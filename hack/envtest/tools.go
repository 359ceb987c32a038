//go:build tools

// This file keeps k8s.io/kubernetes/cmd/kube-apiserver and
// cmd/kube-controller-manager in go.mod so that build.sh can build them with
// this module's pinned dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)

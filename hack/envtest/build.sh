#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into a
# versioned cache directory, only when they are missing, and prints that
# directory (use it as KUBEBUILDER_ASSETS). Progress goes to stderr so that
#   export KUBEBUILDER_ASSETS=$(hack/envtest/build.sh)
# works.
#
# Environment:
#   FLEETGRAPH_CACHE  cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph)
set -euo pipefail

KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.14

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${FLEETGRAPH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph}
dir="$cache/envtest/$KUBE_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$dir"

say() { echo "envtest-assets: $*" >&2; }

build() { # name, package, ldflags
	local name=$1 pkg=$2 ldflags=$3
	if [[ -x "$dir/$name" ]]; then
		return
	fi
	say "building $name from $pkg into $dir (first time only; a few minutes on 2 cores)..."
	local start=$SECONDS
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dir/$name.tmp" "$pkg") >&2
	mv "$dir/$name.tmp" "$dir/$name"
	say "built $name in $((SECONDS - start)) s"
}

build etcd ./etcd "-s -w"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
	"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"

echo "$dir"

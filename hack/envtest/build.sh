#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into a
# versioned cache directory, only when they are missing, and prints that
# directory (use it as KUBEBUILDER_ASSETS). Progress goes to stderr so that
#   export KUBEBUILDER_ASSETS=$(hack/envtest/build.sh)
# works.
#
# With the argument kube-controller-manager it also builds that binary (same
# module, version and flags) into the same directory: only the fleets that
# need the HPA or garbage collection (make e2e-kro) ask for it, so make test
# does not pay for its build.
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

# Two builds at once (two checkouts, or a helper and CI) must not break each
# other: the second waits for the first under a lock, and every build writes
# a temporary file of its own that is renamed into place atomically.
exec 9>"$dir/.lock"
if command -v flock >/dev/null; then
	flock 9
fi

build() { # name, package, ldflags
	local name=$1 pkg=$2 ldflags=$3
	if [[ -x "$dir/$name" ]]; then
		return
	fi
	say "building $name from $pkg into $dir (first time only; a few minutes on 2 cores)..."
	local start=$SECONDS tmp
	tmp=$(mktemp "$dir/$name.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg") >&2
	chmod 0755 "$tmp"
	mv -f "$tmp" "$dir/$name"
	trap - EXIT
	say "built $name in $((SECONDS - start)) s"
}

kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36"
build etcd ./etcd "-s -w"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_ldflags"
for extra in "$@"; do
	case $extra in
	kube-controller-manager) build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$kube_ldflags" ;;
	*) say "unknown binary $extra (known: kube-controller-manager)"; exit 2 ;;
	esac
done

echo "$dir"

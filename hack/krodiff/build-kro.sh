#!/usr/bin/env bash
# Builds kro's controller (the oracle of the behaviour comparison) from the
# Go module proxy into a versioned cache directory, only when it is missing,
# and prints the binary's path. Progress goes to stderr so that
#   KRO_CONTROLLER=$(hack/krodiff/build-kro.sh)
# works. Two builds at once cannot break each other: each writes its own
# temporary file and renames it into place.
#
# Environment:
#   FLEETGRAPH_CACHE  cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/kubernetes-sigs/kro)
cache=${FLEETGRAPH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph}
dir="$cache/kro/$version"
bin="$dir/kro-controller"
mkdir -p "$dir"

if [[ ! -x "$bin" ]]; then
	echo "kro-controller: building kro $version into $dir (first time only; a few minutes on 2 cores)..." >&2
	start=$SECONDS
	tmp=$(mktemp "$dir/.kro-controller.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/kubernetes-sigs/kro/cmd/controller) >&2
	chmod +x "$tmp"
	mv -f "$tmp" "$bin"
	echo "kro-controller: built in $((SECONDS - start)) s" >&2
fi
echo "$bin"

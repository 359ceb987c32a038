#!/usr/bin/env bash
# Builds chainsaw (the end-to-end runner kro's e2e cases are written for)
# from the Go module proxy, at the version this module's go.mod pins, into
# the cache, only when it is missing, and prints the binary's path.
# Progress goes to stderr.
#
# Environment:
#   FLEETGRAPH_CACHE  cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(cd "$here" && go list -m -f '{{.Version}}' github.com/kyverno/chainsaw)
cache=${FLEETGRAPH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgraph}
dir="$cache/chainsaw/$version"
mkdir -p "$dir"

exec 9>"$dir/.lock"
if command -v flock >/dev/null; then
	flock 9
fi
if [[ ! -x "$dir/chainsaw" ]]; then
	echo "chainsaw: building $version into $dir (first time only)..." >&2
	start=$SECONDS
	tmp=$(mktemp "$dir/chainsaw.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/kyverno/chainsaw) >&2
	chmod 0755 "$tmp"
	mv -f "$tmp" "$dir/chainsaw"
	trap - EXIT
	echo "chainsaw: built in $((SECONDS - start)) s" >&2
fi
echo "$dir/chainsaw"

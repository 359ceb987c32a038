#!/usr/bin/env bash
# Fails when a dependency points the wrong way (DESIGN.md, "Layout"):
#   - providers and testing depend on multicluster-runtime, the hub's
#     provider interfaces, the providers' own shared packages
#     (providers/access, providers/internal) and the leaf cache-options
#     package only: never on the spoke runtime, the compiler or CEL;
#   - internal/cacheopts imports no other package of this module;
#   - the public spoke package imports neither sdk nor any hub package;
#   - the public hub package imports neither sdk nor spoke, nor the
#     instance runtime, the compiler or CEL (its unit is a CRD);
#   - a command (cmd/...) imports public packages only: none of the
#     module's internal/ packages, though a binary's own code may live in
#     cmd/<name>/internal/.
# It reads `go list` only (no build, no test), so it is cheap. Run by
# `make check`.
set -euo pipefail
cd "$(dirname "$0")/../.."

module=github.com/fleetgraph/fleetgraph
bad=0

# forbid PATTERN WHY PACKAGES...: fail if the dependencies of PACKAGES
# (without their tests) match the extended regular expression PATTERN.
forbid() {
	local pattern=$1 why=$2
	shift 2
	local hits
	hits=$(go list -deps "$@" | grep -E "$pattern" || true)
	if [[ -n "$hits" ]]; then
		echo "$* must not depend on $why, but depend on:" >&2
		echo "$hits" | sed 's/^/  /' >&2
		bad=1
	fi
}

forbid "^$module/(internal/spoke|spoke|sdk/graph)(/|$)|^$module/sdk$|^github.com/google/cel-go/" \
	"the spoke runtime, the compiler or CEL" ./providers/... ./testing/
hits=$(go list -deps ./internal/cacheopts | grep "^$module/" | grep -v "^$module/internal/cacheopts$" || true)
if [[ -n "$hits" ]]; then
	echo "internal/cacheopts must be a leaf, but depends on: $hits" >&2
	bad=1
fi
if [[ -d spoke ]]; then
	forbid "^$module/(sdk|hub|internal/hub)$" "sdk or a hub package" ./spoke/...
fi
if [[ -d hub ]]; then
	forbid "^$module/(sdk|spoke)$|^$module/(spoke|internal/spoke|sdk/graph)(/|$)|^github.com/google/cel-go/" \
		"sdk, spoke, the instance runtime, the compiler or CEL" ./hub/
fi

# Direct imports, not dependencies: a public package may use internal ones.
hits=$(go list -f '{{$p := .ImportPath}}{{range .Imports}}{{$p}} -> {{.}}{{"\n"}}{{end}}' ./cmd/... | grep -E -- "-> $module/internal/" || true)
if [[ -n "$hits" ]]; then
	echo "commands must import public packages only (or their own cmd/<name>/internal/), but:" >&2
	echo "$hits" | sed 's/^/  /' >&2
	bad=1
fi

exit $bad

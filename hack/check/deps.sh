#!/usr/bin/env bash
# Fails when a dependency points the wrong way. The layers, bottom up:
#
#   leaves      internal/{cacheopts,fair,crdschema,crdcompat,retrylog,reach,
#               steps,shard,apicheck} (nothing of the module), and
#               internal/{crds,contract} (API types and the compiler only);
#   compiler    sdk/graph/... and API types sdk/apis/... (sdk/hold, the
#               edits of a rollout's holds, is a public leaf over them);
#   engine      internal/instance: one instance engine;
#   drivers     internal/spoke (one cluster) and internal/hubgraph (targets);
#   hub side    internal/{rgd,revisions,replicas,rollout,clustervalues,
#               cleanup,spokeschemas,placementdecision}: the hub's
#               controllers;
#   public      hub, spoke, providers/..., testing, and sdk on top;
#   binaries    cmd/...: public packages, and their own cmd/<name>/internal.
#
# Every rule is one row of RULES below: which packages, what they must not
# depend on (an extended regular expression over `go list -deps`, without
# tests), its exceptions, and why. Binaries are checked on their direct
# imports (row "imports"): sdk itself imports internal packages, which is
# what a public package is for. It reads one `go list` (no build, no test), so it is
# cheap. Run by `make check`.
set -euo pipefail
cd "$(dirname "$0")/../.."

m=github.com/fleetgraph/fleetgraph
engine="internal/instance"
drivers="internal/(spoke|hubgraph)"
hubside="internal/(rgd|revisions|replicas|rollout|clustervalues|cleanup|spokeschemas|placementdecision)"
cel="^github.com/google/cel-go/"
managers="^sigs.k8s.io/(controller-runtime|multicluster-runtime)/pkg/(manager|builder|controller)(/|\$)"

# RULES: one rule a row, its fields separated by ";": mode; packages;
# forbidden, an extended regular expression over the packages depended
# on; the exceptions to it (a regular expression too, "-" for none); why.
# Mode deps forbids any dependency, direct or not; mode nothing forbids
# every package of the module but the package itself; mode imports
# forbids direct imports of the module's internal packages other than the
# importer's own cmd/<name>/internal.
RULES=(
	"nothing; ./internal/cacheopts ./internal/fair ./internal/crdschema ./internal/crdcompat ./internal/retrylog ./internal/reach ./internal/steps ./internal/shard ./internal/apicheck; -; -; a leaf imports nothing of the module"
	"deps; ./internal/crds ./internal/contract; ^$m/(sdk|hub|spoke|providers|testing|cmd)(/|\$)|^$m/($engine|$drivers|$hubside)(/|\$); ^$m/sdk/(graph|apis)(/|\$); the leaves that name API types or graphs import nothing above the compiler"
	"deps; ./sdk/graph/... ./sdk/apis/...; ^$m/(sdk|hub|spoke|providers|testing|cmd|internal)(/|\$); ^$m/sdk/(graph|apis)(/|\$)|^$m/internal/crdcompat\$; the compiler and the API types sit below everything but a leaf"
	"deps; ./internal/instance; ^$m/(sdk|hub|spoke|providers|testing|cmd)(/|\$)|^$m/($drivers|$hubside)(/|\$)|$managers; ^$m/sdk/(graph|apis)(/|\$); the engine imports the leaves and the compiler only: no driver, no hub-side controller, no public package, no manager or controller"
	"deps; ./internal/spoke; ^$m/(sdk|hub|spoke|providers|testing|cmd)(/|\$)|^$m/(internal/hubgraph|$hubside)(/|\$); ^$m/sdk/(graph|apis)(/|\$); a driver imports the engine and the leaves, not the other driver"
	"deps; ./internal/hubgraph; ^$m/(sdk|hub|spoke|providers|testing|cmd)(/|\$)|^$m/(internal/spoke|$hubside)(/|\$); ^$m/sdk/(graph|apis)(/|\$); a driver imports the engine and the leaves, not the other driver"
	"deps; ./internal/rgd ./internal/revisions ./internal/replicas ./internal/rollout ./internal/clustervalues ./internal/cleanup ./internal/spokeschemas ./internal/placementdecision; ^$m/(sdk|spoke|providers|testing|cmd)(/|\$)|^$m/($engine|$drivers)(/|\$); ^$m/sdk/(graph|apis|hold)(/|\$); the hub side decides for the fleet: it runs no instance"
	"deps; ./hub/...; ^$m/(sdk|spoke)(/|\$)|^$m/($engine|$drivers|$hubside)(/|\$)|$cel; ^$m/sdk/apis(/|\$); public hub's unit is a CRD: no sdk, spoke, engine, driver, compiler or CEL"
	"deps; ./spoke/...; ^$m/(sdk|hub)(/|\$)|^$m/(internal/hubgraph|$hubside)(/|\$); ^$m/sdk/(graph|apis)(/|\$); public spoke imports neither sdk nor hub"
	"deps; ./providers/... ./testing/...; ^$m/(sdk|spoke)(/|\$)|^$m/($engine|$drivers)(/|\$)|$cel; ^$m/sdk/apis(/|\$); providers and testing run no instance and compile nothing"
	"imports; ./cmd/...; -; -; binaries import public packages only, and their own cmd/<name>/internal"
)

bad=0
fail() {
	echo "$1" >&2
	bad=1
}

field() { sed -E 's/^ +| +$//g' <<<"$1"; }

# One go list for everything: each package with its dependencies (direct
# or not) and its direct imports.
graph=$(go list -f '{{.ImportPath}};{{join .Deps " "}};{{join .Imports " "}}' ./...)

# selected PATTERNS prints the packages that go list patterns (./x, ./x/...)
# name, from graph.
selected() {
	local re=""
	for pat in $1; do
		pat=${pat#./}
		if [[ $pat == *"/..." ]]; then
			re+="|^$m/${pat%/...}(/|;)"
		else
			re+="|^$m/$pat;"
		fi
	done
	grep -E "${re#|}" <<<"$graph" | cut -d';' -f1
}

# field N of the package P's line in graph: 2 its dependencies, 3 its
# direct imports, one a line.
of() { grep -E "^$1;" <<<"$graph" | cut -d';' -f"$2" | tr ' ' '\n'; }

for rule in "${RULES[@]}"; do
	IFS=';' read -r mode pkgs forbidden except why <<<"$rule"
	mode=$(field "$mode") pkgs=$(field "$pkgs") forbidden=$(field "$forbidden") except=$(field "$except") why=$(field "$why")
	for p in $(selected "$pkgs"); do
		case $mode in
		nothing)
			hits=$(of "$p" 2 | grep "^$m/" || true)
			[[ -z $hits ]] || fail "$p: $why, but depends on: $(tr '\n' ' ' <<<"$hits")"
			;;
		deps)
			hits=$(of "$p" 2 | grep -E "$forbidden" || true)
			if [[ $except != - && -n $hits ]]; then
				hits=$(grep -vE "$except" <<<"$hits" || true)
			fi
			[[ -z $hits ]] || fail "$p: $why, but depends on: $(tr '\n' ' ' <<<"$hits")"
			;;
		imports)
			own=$(sed -nE "s#^($m/cmd/[^/]+)(/.*)?\$#\1/internal#p" <<<"$p")
			for i in $(of "$p" 3); do
				case $i in
				"$own" | "$own"/*) ;;
				$m/internal | $m/internal/* | $m/*/internal | $m/*/internal/*)
					fail "$p imports $i: $why" ;;
				esac
			done
			;;
		esac
	done
done

exit $bad

# fleetgraph developer targets. `make test` is what CI runs.

GO          ?= go
GOTESTFLAGS ?=
# Packages whose tests take longest, named first: go test starts packages'
# test binaries in the order given (-p at a time), so a long pole named last
# (./... is alphabetical, and sdk is near its end) would run alone at the end.
# Here: every package that took over 20 s in the last CI, longest first.
TEST_FIRST  ?= ./sdk/ ./providers/kcp/ ./internal/spoke/ ./examples/kcp/ ./cmd/fleetgraph/internal/cli/ ./cmd/fleetgraph-hub/ \
	./examples/rollout/ ./examples/quickstart/ ./examples/mesh/ ./examples/embed-manager/ ./sdk/graph/ ./testing/ ./spoke/
# Integration tests start real API servers; give a slow machine room.
TEST_TIMEOUT ?= 40m
# How many packages' test binaries run at once (go test -p; its default is
# the number of cores). Most integration packages wait on API servers, kcp
# and soak periods rather than compute: measured with their API servers,
# providers/kcp used 39 CPU-seconds in 161 s, examples/kcp 23 in 88,
# cmd/fleetgraph-hub 40 in 74, cmd/fleetgraph/internal/cli 44 in 78; only
# sdk keeps about one core busy. Three at once (with the kro oracle beside
# them) drove the load average to 20-45 in CI, where bounds that hold at
# any sane load (a 60 s wait for a hub to serve one spoke) ran out; two at
# once, one per core, costs a few minutes and keeps them honest.
TEST_P ?= 2

.PHONY: all
all: test

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd into the cache (first time only).
	@hack/envtest/build.sh >/dev/null

.PHONY: kcp-assets
kcp-assets: ## Build the kcp server into the cache (first time only).
	@if [ -x hack/kcp/build.sh ]; then hack/kcp/build.sh >/dev/null; fi

.PHONY: check
check: ## go vet, gofmt, dependencies point one way, and no build output (binaries, files over 1 MiB) tracked.
	@hack/check/tracked-files.sh
	@hack/check/deps.sh
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags 'integration hostile' ./sdk/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: test-unit
test-unit: ## Fast tests: no API servers.
	$(GO) test $(GOTESTFLAGS) ./...

.PHONY: test-integration
test-integration: envtest-assets kcp-assets ## Unit and integration tests against real API servers.
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -race -tags integration -count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(GOTESTFLAGS) $(TEST_FIRST) ./...

.PHONY: test-kro
test-kro: envtest-assets ## kro v0.9.4 as the oracle: compile (hack/krodiff's corpus) and behaviour (kro's controller vs the hub).
	cd hack/krodiff && $(GO) vet -tags integration ./... && \
		KUBEBUILDER_ASSETS=$$(../envtest/build.sh) KRO_CONTROLLER=$$(./build-kro.sh) \
		$(GO) test -tags integration -count=1 -timeout 20m $(GOTESTFLAGS)

# The public corpus's files are not in this repository (hack/krodiff/testdata/
# public-sources.txt lists where each comes from): point KRODIFF_PUBLIC_CORPUS
# at a directory holding a copy of each, named as that list says.
.PHONY: test-kro-public
test-kro-public: envtest-assets ## kro v0.9.4 against fleetgraph on RGDs others wrote (needs KRODIFF_PUBLIC_CORPUS, see hack/krodiff/testdata/public-sources.txt).
	@test -n "$(KRODIFF_PUBLIC_CORPUS)" || { echo "set KRODIFF_PUBLIC_CORPUS to the directory holding the public corpus"; exit 2; }
	cd hack/krodiff && KUBEBUILDER_ASSETS=$$(../envtest/build.sh) KRODIFF_PUBLIC_CORPUS=$(abspath $(KRODIFF_PUBLIC_CORPUS)) \
		$(GO) test -tags integration -count=1 -timeout 20m -run 'TestCompileAgainstKroOnPublicRGDs|TestPublicSourcesAreAttributed' -v $(GOTESTFLAGS)

# kro's own chainsaw e2e cases (kro v0.9.4, read from the Go module cache)
# on a conformance fleet: a hub running fleetgraph and two spokes, each with
# a kube-controller-manager. hack/kroe2e says what it adapts (RGDs to the
# hub, CRDs to every spoke); docs/guides/testing.md has the figures. Not
# part of make test: it builds kube-controller-manager and chainsaw.
KRO_E2E_FLAGS ?=
.PHONY: e2e-kro
e2e-kro: ## kro v0.9.4's chainsaw e2e (11 cases) on a hub + 2 spokes with kube-controller-managers; one PASS/FAIL line per case. KRO_E2E_FLAGS=-run <regexp> picks cases.
	@KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh kube-controller-manager) \
		$(GO) test -tags 'integration controllermanager' -count=1 -run TestAFleetWithControllerManagers ./testing/
	@cd hack/kroe2e && $(GO) test -count=1 ./... && \
		KUBEBUILDER_ASSETS=$$(../envtest/build.sh kube-controller-manager) \
		$(GO) run . -chainsaw $$(../chainsaw/build.sh) \
		-kro $$(cd ../krodiff && $(GO) mod download -json github.com/kubernetes-sigs/kro | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') \
		$(KRO_E2E_FLAGS)

# test runs the kro oracle alongside the integration tests rather than after
# them: it mostly waits on its API servers and kro's controller (31
# CPU-seconds in 112 s). Lines of the two are not interleaved (-Oline);
# either one failing fails test.
.PHONY: test
test: check ## Everything CI runs: check, then test-integration and test-kro at once.
	@$(MAKE) --no-print-directory -j2 -Oline test-integration test-kro

# The tenants who forge what the hub trusts (issue 38): a forged approver,
# approvals without the approve verb or of revisions not published, a
# forged unreachable-since annotation, a fleet view past
# the allowed set, objects that copy our labels (every driver's shared
# table), a PlacementDecision of the same name. They also run in make test.
TRUST_TESTS := TestARequiredWaveWaitsForApproval|TestAnApprovalOfARevisionNotPublishedYetIsIgnored|TestHubGraphForgedUnreachableSinceDoesNotAbandon|TestHubGraphFleetShowsOnlyAllowedClusters|TestPublishingNeverOverwritesAnotherPlacementDecision|TestEveryDriverBehavesTheSame

.PHONY: test-hostile
test-hostile: envtest-assets ## Issue 23's hostile corpus end to end without the race detector, which would inflate RSS about 3x: 68 cases, a restart, peak RSS < 512 MiB, a benign tenant's p99 < 1 s (or 2x a plain controller's on the same kind, measured alongside, where that floor is over 1 s); then issue 38's forged trust cases (TRUST_TESTS).
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags 'integration hostile' -count=1 -timeout 20m -run TestHostileTenantsAreStoppedAndOthersKeepWorking -v ./sdk/
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -count=1 -p 1 -timeout 20m -run '$(TRUST_TESTS)' -v ./sdk/ ./internal/instance/

.PHONY: test-hostile-race
test-hostile-race: envtest-assets ## The hostile corpus under the race detector: its cases and the restart; the RSS and p99 bounds are asserted by test-hostile only.
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -race -tags 'integration hostile' -count=1 -timeout 20m -run TestHostileTenantsAreStoppedAndOthersKeepWorking -v ./sdk/

.PHONY: bench
bench: envtest-assets ## Benchmarks against their floors (docs/performance.md): compile (again, first), CRD fan-out (1 vs 3 spokes), relabels, 200 hub-graph instances across 2 spokes, 500 instances (and the required writes alone).
	$(GO) test -run '^$$' -bench BenchmarkCompile -benchmem ./sdk/graph/...
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkCRDFanOut -benchtime 20x ./sdk/
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkRelabel100 -benchtime 20x ./spoke/
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkHubGraph200 -benchtime 3x -timeout 20m ./sdk/
	@if grep -qs BenchmarkWebApp500 internal/spoke/*_test.go; then \
		KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench 'BenchmarkWebApp500(WritesOnly)?$$' -benchtime 7x -timeout 40m ./internal/spoke/; fi

.PHONY: bench-memory
bench-memory: envtest-assets ## Hub heap and RSS with 1,000 and 5,000 ACTIVE WebApps on one spoke, and the time to delete them.
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkWebAppScale -benchtime 1x -timeout 40m ./internal/spoke/

.PHONY: bench-rollout
bench-rollout: envtest-assets ## Benchmark: a new revision on 4 spokes, one-wave GraphRollout vs the unconditional fan-out.
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkRolloutOneWave -benchtime 20x ./sdk/

# Flags for the demos below, e.g. DEMO_FLAGS=-keep to keep the fleet up
# afterwards (with a kubeconfig holding a context per cluster), -v for
# controller logs.
DEMO_FLAGS ?=

.PHONY: rollout-demo
rollout-demo: envtest-assets ## Run the rollout demo on a local embedded fleet: two waves, an approval, a held cluster, a failed canary rolled back (DEMO_FLAGS=-keep keeps the fleet).
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) $(GO) run ./examples/rollout $(DEMO_FLAGS)

.PHONY: bench-fleet
FLEET_MODES ?= floor namespace shared testing
FLEET_SIZES ?= 100 300 1000
bench-fleet: envtest-assets ## One hub, N simulated clusters on one API server, each N in a fresh process: time to serve, RSS and goroutines per cluster, and the floor (the same informers, no hub). FLEET_MODES, FLEET_SIZES, FLEET_GRAPHS, FLEET_TIMEOUT override.
	@for mode in $(FLEET_MODES); do for n in $(FLEET_SIZES); do \
		KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) FLEET_MODES=$$mode FLEET_SIZES=$$n \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkFleet -benchtime 1x -timeout 30m ./sdk/ \
		| grep --line-buffered -E '^(fleet|Benchmark|FAIL|--- |    )' || exit 1; done; done

.PHONY: bench-scale
SCALE_CLUSTERS ?= 10000
SCALE_REPLICAS ?= 4
bench-scale: envtest-assets ## SCALE_CLUSTERS simulated clusters (default 10000) across SCALE_REPLICAS hub replica processes (default 4) on the sharded coordinator: time until every instance is ACTIVE, RSS and memory per cluster per replica against the informer floor, a one-wave rollout, one replica killed and the takeover time, double serving. SCALE_SIM=shared (default: each cluster its own namespace-confined informers) or namespace (multicluster-runtime's namespace provider; the rollout runs only with it); SCALE_FLOOR=0 skips the floor, SCALE_ROLLOUT=0 the rollout; SCALE_PPROF=<port> serves pprof from replica-<i> on port+i; FLEET_TIMEOUT bounds each wait (default 30m).
	@st=$$(mktemp); { KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) SCALE_CLUSTERS=$(SCALE_CLUSTERS) SCALE_REPLICAS=$(SCALE_REPLICAS) FLEET_TIMEOUT=$${FLEET_TIMEOUT:-30m} \
		$(GO) test -tags integration -run '^$$' -bench BenchmarkScale -benchtime 1x -timeout 90m ./sdk/; echo $$? >$$st; } \
		| grep --line-buffered -E '^(fleet|scale|Benchmark|FAIL|--- |    |ok)'; code=$$(cat $$st); rm -f $$st; exit $$code

.PHONY: mesh
mesh: envtest-assets ## Run the mesh demo: one hub graph connecting two spokes (trust bundle, ingress, egress to the other's ingress); DEMO_FLAGS=-keep keeps the fleet and the Mesh.
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) $(GO) run ./examples/mesh $(DEMO_FLAGS)

.PHONY: quickstart
quickstart: envtest-assets ## Run the quickstart on a local embedded fleet (DEMO_FLAGS=-keep keeps the fleet).
	KUBEBUILDER_ASSETS=$$(hack/envtest/build.sh) $(GO) run ./examples/quickstart $(DEMO_FLAGS)

.PHONY: cli
cli: ## Build the fleetgraph command into bin/, with bin/kubectl-fleetgraph and bin/kubectl_complete-fleetgraph (its completion) for kubectl (put bin/ on PATH).
	$(GO) build -o bin/fleetgraph ./cmd/fleetgraph
	ln -sf fleetgraph bin/kubectl-fleetgraph
	ln -sf fleetgraph bin/kubectl_complete-fleetgraph

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

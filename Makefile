# poolparity: does pooling pay in production? Measure it, ship it as a canary.
#
# `make` (or `make help`) lists the targets. Tools are pinned and installed
# into ./bin by `make tools`; builds are cached under ~/.cache/poolparity so a
# second clone on the same machine reuses them.

SHELL := bash
# One target at a time, even under make -j: generate rewrites files under deploy/ that the test
# targets read, and the targets share the machine's cores anyway.
.NOTPARALLEL:
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
export KUBEBUILDER_ASSETS ?= $(BIN)/k8s
GO ?= go
# The Go toolchain of every recipe (the go command downloads it through the module proxy on first
# use): Go 1.26.10 carries the standard library's security fixes that 1.26.8 lacks (`make
# vulncheck`). go.mod's toolchain line alone would not do: the machine's GOTOOLCHAIN=local ignores
# it. Override with e.g. `make GOTOOLCHAIN=local ...` to use the installed Go.
export GOTOOLCHAIN ?= go1.26.10

# Demo knobs (see README): SCENARIO=good|regression|aa|misuse-hold|misuse-reset|misuse-retain|misuse-dirty, DURATION, GRAY_WEIGHT.
# SERVICE=example runs the example service (examples/imagesvc; SCENARIO=good|aa|misuse-cap) instead of the reference one.
SERVICE ?= poolparity
SCENARIO ?= good
DURATION ?= 3m
GRAY_WEIGHT ?= 50
# TELEMETRY: metrics (Prometheus scrapes the tracks) or otlp (a collector beside each track; docs/otlp.md).
TELEMETRY ?= metrics
# Benchmark repetitions for benchstat (the instrument pool benchmarks want >= 10).
BENCH_COUNT ?= 6
INSTRUMENT_BENCH_COUNT ?= 10
# Go modules in this repository: instrument is a module of its own, and
# `go test ./...` at the root does not descend into it.
GO_MODULES := . instrument
# The settings `make gc-tuning` measures (hack/misusebench's BENCH_GC): the default
# first, then GOGC values, then GOGC=off with GOMEMLIMIT at X times the live heap.
GC_TUNING ?= default,400,1000,off:1.1,off:2,off:8
# How many inputs each fuzz target runs in `make test` (about 20 s each on a
# 2-core machine). Counts, not durations: with a duration, Go 1.26's fuzzing
# coordinator can fail a clean run with "context deadline exceeded" at the
# deadline (golang/go#75804, fixed in Go 1.27; CI failed on it once). Scale all
# four with FUZZSCALE (an integer multiplier).
FUZZSCALE ?= 1

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m [VAR=value]\n"} \
	/^[a-zA-Z0-9_.-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
	/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Demo

.PHONY: demo
demo: ## Run both tracks, load and Prometheus locally (a case of poolparity-parity local); print the parity verdict.
	SERVICE=$(SERVICE) SCENARIO=$(SCENARIO) DURATION=$(DURATION) GRAY_WEIGHT=$(GRAY_WEIGHT) TELEMETRY=$(TELEMETRY) hack/demo.sh

.PHONY: demo-screenshot
demo-screenshot: ## Render out/report.html (from the last demo) to docs/demo.png with headless Chromium.
	hack/demo.sh screenshot

##@ Development

# The phases of `make test`, in order; each one's wall time is printed as it ends and in a table at the
# end, so a CI run shows where its minutes go (the budget is 50 minutes warm on 2 cores).
TEST_PHASES := tools fmt-check vet lint generate-check vulncheck test-go test-mutants test-kwok test-rules test-fuzz test-e2e test-kind

.PHONY: test
test: ## Run every check CI runs (installs pinned tools first), timing each phase.
	@times=""; total=$$(date +%s); \
	for p in $(TEST_PHASES); do \
		s=$$(date +%s); $(MAKE) --no-print-directory $$p || { echo "make test: $$p failed after $$(( $$(date +%s) - s ))s"; exit 1; }; \
		d=$$(( $$(date +%s) - s )); echo "make test: $$p took $${d}s"; times="$$times$$p $${d}s\n"; \
	done; \
	printf "make test: phase times\n$$times"; echo "make test: all phases in $$(( $$(date +%s) - total ))s"

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: fmt-check
fmt-check: ## Fail when a Go file is not gofmt-clean.
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## Run go vet.
	for m in $(GO_MODULES); do $(GO) -C $$m vet ./...; done

.PHONY: lint
lint: tools-go ## Run staticcheck.
	for m in $(GO_MODULES); do (cd $$m && $(BIN)/staticcheck ./...); done

# govulncheck reads the database that hack/install-tools.sh builds from the pinned golang.org/x/vulndb
# module (bin/vulndb, hack/vulndb), so the check runs offline on pinned data. It fails on a known
# vulnerability that a module's code calls (govulncheck's exit status 3), not on one that is only
# in a required module or an imported package; `-show verbose` lists those.
VULNDB := $(BIN)/vulndb
.PHONY: vulncheck
vulncheck: tools-vuln ## Fail when a Go module's code calls a known vulnerability (govulncheck, offline, on the pinned database).
	@failed=""; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for m in $(GO_MODULES); do \
		echo "govulncheck $$m/... with $$($(GO) -C $$m env GOVERSION), database $$(cat $(VULNDB)/SOURCE.txt)"; \
		rc=0; $(BIN)/govulncheck -db file://$(VULNDB) -C $$m ./... | tee "$$log" || rc=$$?; \
		case $$rc in \
		0) ;; \
		3) failed+="; $$m/... calls$$(awk '/^Vulnerability #/ { printf " %s", $$3 } /Fixed in:/ { fix[$$3] } END { printf " (fixed in"; for (f in fix) printf " %s", f; printf ")" }' "$$log")" ;; \
		*) failed+="; govulncheck could not check $$m/... (exit status $$rc)" ;; \
		esac; \
	done; \
	if [ -n "$$failed" ]; then echo "vulncheck: FAILED: $${failed#; }" >&2; exit 1; fi

# -race builds instrument's atomic counting path (bump_atomic.go); the plain loads and stores that
# ship (bump_plain.go) are built only without it, so instrument's tests, whose exact counts fail
# when the plain bump is wrong, run a second time without -race.
#
# NORACE_PKGS are run without -race: single-goroutine numeric code (the sequential test's
# simulations), where the detector has nothing to find and multiplies the time by six (345 s
# against 58 s on 2 cores). Each holds that with a test that fails on a go statement or a sync
# import in its code (seqcount's TestNoConcurrency), so concurrency added there is sent back here.
NORACE_PKGS := github.com/poolparity/poolparity/internal/parity/seqcount
.PHONY: test-go
test-go: ## Run the Go tests with the race detector (Redis, envtest, helm, kustomize tests included), NORACE_PKGS and instrument's again without it.
	$(GO) test -race -timeout 20m $$($(GO) list ./... | grep -vxF $(foreach p,$(NORACE_PKGS),-e $(p)))
	for m in $(filter-out .,$(GO_MODULES)); do $(GO) -C $$m test -race -timeout 20m ./...; done
	$(GO) test -count=1 -timeout 10m $(NORACE_PKGS)
	$(GO) -C instrument test -count=1 -timeout 10m ./...

.PHONY: test-mutants
test-mutants: ## Show the judge's guard tests catch each mutant of its bars, weights and allowances (hack/mutants, go test -overlay).
	$(GO) run ./hack/mutants

.PHONY: test-kwok
test-kwok: ## helm install --wait into a kwok cluster (real control plane, simulated nodes): rollout, endpoints, HPAs.
	POOLPARITY_KWOK=1 $(GO) test -count=1 -run '^TestHelmInstallOnKwok$$' ./deploy/

.PHONY: test-rules
test-rules: ## Check the rules and run the promtool rule unit tests.
	hack/test-rules.sh

.PHONY: test-fuzz
test-fuzz: ## Run each fuzz target briefly (a fixed count of inputs each, times FUZZSCALE).
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeItem$$' -fuzztime $$((800000 * $(FUZZSCALE)))x ./internal/item
	$(GO) test -run '^$$' -fuzz '^FuzzAppendUnquoted$$' -fuzztime $$((150000 * $(FUZZSCALE)))x ./internal/termstats
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $$((100000 * $(FUZZSCALE)))x ./internal/recorded
	$(GO) test -run '^$$' -fuzz '^FuzzParsePath$$' -fuzztime $$((300000 * $(FUZZSCALE)))x ./internal/loadgen
	$(GO) test -run '^$$' -fuzz '^FuzzPinQuery$$' -fuzztime $$((20000 * $(FUZZSCALE)))x ./internal/parity/promread
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRuleList$$' -fuzztime $$((30000 * $(FUZZSCALE)))x ./internal/parity/promread

.PHONY: test-e2e
test-e2e: ## Run the demo scenarios (good, regression, aa, misuse-dirty, misuse-reset, misuse-retain; the example service's good and misuse-cap; its never-reset and never-put through the local mode; docs/demo.md's local command) in short form and assert their verdicts.
	POOLPARITY_E2E=1 $(GO) test -v -count=1 -timeout 20m -run '^TestE2E' ./app/cmd/poolparity-demo

# The pinned tools generation runs. Without one, make stops with one line; `make tools` builds them.
CONTROLLER_GEN := $(BIN)/controller-gen
HELM := $(BIN)/helm
KUSTOMIZE := $(BIN)/kustomize
GEN_TOOLS := $(CONTROLLER_GEN) $(HELM) $(KUSTOMIZE)
$(GEN_TOOLS):
	@echo "bin/$(@F) not found: run make tools" >&2; exit 1

.PHONY: generate
generate: $(GEN_TOOLS) ## Regenerate the rules files, CRD, RBAC, deepcopy code, the chart's dashboard copies, kustomize base and golden files (hack/gen).
	$(GO) run ./hack/gen

.PHONY: generate-check
generate-check: generate ## Regenerate, then fail when git shows a changed or untracked generated file.
	$(GO) run ./hack/gen -check

.PHONY: verdict-eval
verdict-eval: ## Measure false alarms and detection of the alert rules and the parity judge; writes docs/verdict-eval.md.
	$(GO) run ./hack/verdicteval -out docs/verdict-eval.md

.PHONY: verdict-eval-counts
verdict-eval-counts: ## Simulate the scraped counters and measure the count-based and per-minute judges; writes docs/verdict-eval-counts.md.
	$(GO) run ./hack/verdicteval counts -out docs/verdict-eval-counts.md

.PHONY: bench
bench: tools-go ## Run the instrument and service benchmarks and print benchstat tables.
	BENCH_COUNT=$(INSTRUMENT_BENCH_COUNT) hack/bench.sh
	BENCH_COUNT=$(BENCH_COUNT) hack/bench-service.sh

.PHONY: misuse-bench
misuse-bench: ## wrk on every POOL_MODE side by side (needs wrk, redis-server); writes the table into docs/pool-misuse.md.
	$(GO) run ./hack/misusebench -bench-write docs/pool-misuse.md

.PHONY: gc-tuning
gc-tuning: ## GOGC and GOMEMLIMIT against pooling: unpooled and pooled under each setting with wrk (needs wrk, redis-server); writes the table into docs/gc-tuning.md.
	BENCH_GC=$(GC_TUNING) $(GO) run ./hack/misusebench -bench-write docs/gc-tuning.md

##@ Build

.PHONY: build
build: ## Build the binaries into ./bin.
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./app/cmd/...

.PHONY: image
image: ## Build the container image (needs a Docker engine; fails with one line without it).
	hack/image.sh

##@ Cluster (kind: offline here and in CI, online on a laptop; see docs/kind.md)

# KIND_MODE=offline builds every image here (no registry); online uses kindest/node and the
# upstream charts. The step targets below follow KIND_MODE; test-kind is always offline.
KIND_MODE ?= online
KINDRUN = $(GO) run ./hack/kindrun

.PHONY: test-kind
test-kind: ## Offline kind cluster: build the images, install the chart, load, HPAs, split, weighted route, verdicts, the example service, chaos, PoolCanary; then delete it.
	KIND_MODE=offline $(KINDRUN) -steps all

.PHONY: kind-demo
kind-demo: ## Online kind demo on a laptop (kindest/node, kube-prometheus-stack, Grafana); keeps the cluster.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps env,kind-images,kind-up,kind-load,kind-deps,helm-install,scenarios

.PHONY: kind-up kind-images kind-load kind-deps helm-install load parity routing example chaos kind-down
kind-up: ## Create the kind cluster (online: kind-config.yaml; offline: its control-plane node).
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps kind-up
kind-images: ## Build the images the cluster runs (online: the service image only).
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps kind-images
kind-load: kind-images ## Load the images into the kind cluster.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps kind-load
kind-deps: ## Install prometheus-operator (with a Prometheus), metrics-server, the Gateway API CRDs and Traefik (a Gateway).
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps kind-deps
helm-install: ## Install the chart with the kind values and run helm test; install the example service (docs/adopt.md) beside it.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps helm-install
load: ## Run the in-cluster load generator Job against the split Service.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps load
parity: ## Port-forward Prometheus and print the parity table.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps parity
routing: ## Hold the chart's HTTPRoute at gray 10% through Traefik while load drives the HPAs; the share at the Gateway every 10 s.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps routing
example: ## Load the example service (examples/imagesvc) and judge it with docs/adopt.md's command: PASS, Redis and GC share not judged.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps example
chaos: ## Faults under keep-alive load (restarts, pod and Redis deletions, a Redis freeze), each asserted (docs/reliability.md).
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -keep -steps chaos
kind-down: ## Delete the kind cluster.
	KIND_MODE=$(KIND_MODE) $(KINDRUN) -steps kind-down

.PHONY: hpa-groups
hpa-groups: ## Offline cluster: groups A (no HPA), B (CPU) and C (KEDA: CPU + p95) under one stepped load, both builds; writes docs/hpa-groups.md, then deletes the cluster.
	KIND_MODE=offline $(KINDRUN) -steps env,kind-images,kind-up,kind-load,kind-deps,helm-install,hpa-groups-full,kind-down

##@ Dependencies

.PHONY: tools
tools: ## Install every pinned tool into ./bin (helm, kustomize, prometheus, promtool, envtest, kwok and kind-node binaries, linters, govulncheck and its database, Debian packages).
	hack/install-tools.sh all

.PHONY: tools-go
tools-go: ## Install only staticcheck and benchstat.
	hack/install-tools.sh staticcheck benchstat

.PHONY: tools-vuln
tools-vuln: ## Install only govulncheck and the vulnerability database (bin/vulndb).
	hack/install-tools.sh vuln

.PHONY: clean
clean: ## Remove ./bin and ./out (the tool cache in ~/.cache/poolparity stays).
	rm -rf $(BIN) out

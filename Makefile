# Orderly: ordered background jobs on Redis, as a cluster.
# Run `make help` for the targets.

GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
COUNT   ?= 1
FUZZTIME ?= 20s

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z_-]+:.*?## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The version is orderly.Version (version.go), which the binary prints,
# nodes advertise to the cluster and orderly_build_info carries.
# VERSION=x.y.z stamps another version into all of those places. COMMIT
# (git's short hash, -dirty when the tree has changes) is build metadata
# that orderly version prints beside the version.
VERSION ?=
COMMIT  ?= $(shell c=$$(git rev-parse --short=7 HEAD 2>/dev/null) && { [ -z "$$(git status --porcelain 2>/dev/null)" ] || c=$$c-dirty; echo $$c; })
BIN     ?= bin/orderly
LDFLAGS  = $(if $(VERSION),-X github.com/orderlyhq/orderly.Version=$(VERSION)) $(if $(COMMIT),-X github.com/orderlyhq/orderly/cmd/internal/cli.commit=$(COMMIT))
RELEASE_VERSION = $(or $(VERSION),$(shell sed -n 's/^var Version = "\(.*\)"$$/\1/p' version.go))
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: build
build: ## Build the orderly binary into bin/orderly (VERSION=x.y.z stamps another version than version.go's).
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/orderly

.PHONY: release
release: ## Build orderly for each of PLATFORMS into dist/ (VERSION as for build).
	@for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; out=dist/orderly-$(RELEASE_VERSION)-$$os-$$arch; \
	  echo "$$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/orderly || exit 1; \
	done

IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_TAG  ?= orderly:$(RELEASE_VERSION)
IMAGE      ?= dist/orderly-image-$(RELEASE_VERSION)-linux-$(IMAGE_ARCH).tar

.PHONY: image
image: ## Build the container image as a tarball (IMAGE) without a container daemon or a base image: docker load -i / podman load -i it (IMAGE_ARCH, IMAGE_TAG, VERSION).
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -tags timetzdata -ldflags '$(LDFLAGS)' -o dist/orderly-linux-$(IMAGE_ARCH).image ./cmd/orderly
	cd deploy/image && $(GO) run . -binary ../../dist/orderly-linux-$(IMAGE_ARCH).image -arch $(IMAGE_ARCH) -tag '$(IMAGE_TAG)' -version '$(RELEASE_VERSION)' -out ../../$(IMAGE)
	@rm -f dist/orderly-linux-$(IMAGE_ARCH).image
	@echo "$(IMAGE): $$(du -h $(IMAGE) | cut -f1)"

.PHONY: image-check
image-check: image ## Build the image tarball and check it: entrypoint, non-root user, files, and the binary inside runs orderly version.
	cd deploy/image && $(GO) vet . && ORDERLY_IMAGE=$(CURDIR)/$(IMAGE) $(GO) test -count=1 -v .

.PHONY: chart
chart: ## Check the Helm chart (deploy/helm/orderly): helm lint, helm template with each values file, kubeconform -strict against Kubernetes' schemas (.ci/chart).
	@.ci/chart

.PHONY: test
test: ## Run every test with the race detector (starts throwaway redis-servers).
	@.ci/ensure-redis
	$(GO) test -race -count=$(COUNT) -timeout 30m $(PKGS)

.PHONY: bench
bench: ## Run the benchmarks (BENCH=regexp to pick; reports jobs/s and Redis commands per job).
	@.ci/ensure-redis
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 100000x -benchmem $(PKGS)

GROWTH ?= 10000,100000,1000000,10000000

.PHONY: bench-growth
bench-growth: ## Redis memory per queued job and drain jobs/s at 1e4, 1e5, 1e6 and 1e7 queued jobs (GROWTH to change; docs/storage.md §7).
	@.ci/ensure-redis
	$(GO) test -run '^$$' -bench Growth -benchtime 1x -timeout 60m ./persistence/redisstore -args -growth $(GROWTH)

.PHONY: bench-http
bench-http: ## The HTTP rows of bench-report only: HTTP enqueue to the binary, noop handler, drain polled every 10 ms on one connection (JOBS, ROUNDS, FSYNC=always).
	@.ci/ensure-redis
	bench/http/run.sh

.PHONY: bench-asynq
bench-asynq: ## Lowkiq's benchmark on Orderly (noop and webhook handlers) and on asynq side by side (JOBS, ROUNDS, FSYNC=always).
	@.ci/ensure-redis
	bench/asynq/side-by-side.sh

.PHONY: bench-report
bench-report: ## The README's performance table from one run: previous release (layout 1) and this one, asynq, memory, webhooks, pull workers (Go, Python, TypeScript), HTTP, Redis Cluster (JOBS, ROUNDS, MEMJOBS, FSYNC=always, SKIP=asynq,..., PULL_CONCURRENCY).
	@.ci/ensure-redis
	bench/report/run.sh

.PHONY: bench-smoke
bench-smoke: ## Run every benchmark once on small inputs (-short), as CI does, to keep them working.
	@.ci/ensure-redis
	$(GO) test -short -run '^$$' -bench . -benchtime 1x $(PKGS)

.PHONY: lint
lint: ## Check formatting (gofmt) and run go vet.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

.PHONY: guard
guard: ## Repository guards (.ci/guard): no tracked binaries, nothing under cmd/ links test support, staticcheck, go mod tidy, one version, examples build without internal imports, the README program builds, conformance cases name contract rules, bench/asynq builds, docs links resolve, a Go webhook receiver links nothing of the node, file and function sizes, LOCKS.md complete, no foreign types in the root API.
	@.ci/guard

.PHONY: tidy
tidy: ## Run go mod tidy.
	$(GO) mod tidy

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 20s; a count such as 5000x avoids Go 1.26's deadline race, golang/go#75804).
	@pkgs=$$($(GO) list -f '$(FUZZ_FILES)' $(PKGS)) || exit 1; echo "$$pkgs" | while read -r pkg files; do \
	  for f in $$([ -z "$$files" ] || sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$files); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# FUZZ_FILES is a go list template: a package's import path and its test
# files (those its build constraints keep), in which the fuzz target reads
# the FuzzXxx functions rather than build every package's tests to list them.
FUZZ_FILES = {{$$d := .Dir}}{{.ImportPath}}{{range .TestGoFiles}} {{$$d}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$$d}}/{{.}}{{end}}

.PHONY: hostile
hostile: ## Send hostile requests (auth bypasses, path tricks, bad framing, DNS rebinding) to a real node; nothing stored may change.
	@.ci/ensure-redis
	$(GO) test -race -count=1 -run '^TestHostileInput$$' -v ./cmd/orderly

SOAK_ROUNDS ?= 40
HA_SOAK_ROUNDS ?= 5
WHALE_PAYLOADS ?= 200000

.PHONY: soak
soak: soak-chaos soak-ha soak-whale ## Run the long chaos tests: pauses and the other faults, then the Redis HA kills, then a 200k-payload id.

.PHONY: soak-whale
soak-whale: ## Drain one id of WHALE_PAYLOADS payloads (default 200000) through a node while other ids are served.
	@.ci/ensure-redis
	ORDERLY_WHALE_PAYLOADS=$(WHALE_PAYLOADS) $(GO) test -race -count=1 -timeout 60m -run '^TestWhaleDrainsWhileOthersAreServed$$' -v .

.PHONY: soak-chaos
soak-chaos: ## Run the chaos tests long: SOAK_ROUNDS pauses (SIGSTOP past lease_ttl), SOAK_ROUNDS/10 passes over the other faults (webhook and pull queues) and over the reshard plan (standalone and Cluster), SOAK_ROUNDS/2 rounds of the state counters.
	@.ci/ensure-redis
	ORDERLY_PAUSE_ROUNDS=$(SOAK_ROUNDS) ORDERLY_CHAOS_ROUNDS=$$(( $(SOAK_ROUNDS) / 10 + 1 )) ORDERLY_COUNTER_ROUNDS=$$(( $(SOAK_ROUNDS) / 2 + 1 )) \
	  ORDERLY_RESHARD_ROUNDS=$$(( $(SOAK_ROUNDS) / 10 + 1 )) \
	  $(GO) test -race -count=1 -timeout 60m -run '^(TestChaosPause|TestChaos|TestChaosPull|TestChaosCounter|TestChaosReshard|TestChaosReshardCluster)$$' -v ./cmd/orderly

.PHONY: soak-ha
soak-ha: ## Run the Redis HA chaos tests for HA_SOAK_ROUNDS rounds (default 5) of master and node kills under load.
	@.ci/ensure-redis
	ORDERLY_HA_ROUNDS=$(HA_SOAK_ROUNDS) $(GO) test -race -count=1 -timeout 60m -run '^TestHA(Cluster|Sentinel)$$' -v ./cmd/orderly

.PHONY: generate
generate: ## Regenerate generated code.
	$(GO) generate $(PKGS)

.PHONY: verify
verify: generate ## Fail when generated code (*.pb.go) is not what is committed.
	@if ! git diff --quiet -- '*.pb.go' || [ -n "$$(git ls-files --others --exclude-standard -- '*.pb.go')" ]; then \
	  git diff --stat -- '*.pb.go'; echo "generated code is out of date: run make generate and commit"; exit 1; fi

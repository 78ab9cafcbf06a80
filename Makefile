# mcs: `make run` serves fixtures/ on loopback, `make test` runs every check.
SHELL := /bin/bash
GO ?= go
BIN := bin
# Tools built from the module proxy live outside the repo, shared across clones.
TOOLS ?= $(HOME)/.cache/mcs-tools
# Tests find the real Ignition clients under $(MCS_TOOLS)/ignition.
export MCS_TOOLS := $(TOOLS)
FUZZTIME ?= 30s
LISTEN ?= 127.0.0.1:22624
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_UPDATE := $(SUDO) apt-get update -qq

.PHONY: all build test vet fmt-check run bench wrk fuzz clean image container-engine
RUN_DIR ?= fixtures/cluster
# A tree whose worker pool needs spec 3.4 (a Tang advertisement): a node of Ignition
# v2.9 (spec 3.2) gets the skew stub (cmd/render TestMakeRunHints).
RUN_STUB_DIR := fixtures/features/tang-advertisement-3.4
URL := http://$(LISTEN)

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/mcs ./cmd/render

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The real Ignition clients and the Kubernetes control plane are built first
# (once; cached under $(TOOLS)), with the rollback rehearsal's reader, a
# container engine and Chromium installed; tests that need them fail, not
# skip, under CI=true.
test: fmt-check vet ignition-clients kube-tools rollback-reader container-engine chromium promtool kubectl
	$(GO) test -race -count=1 -timeout 30m ./...
	# 20,000 generated configs against Ignition's own readers: without the
	# race detector, which only makes it five times slower (see the test).
	$(GO) test -count=1 -run '^TestLowerCorpusReaders$$' ./admit/

# Attacks and load thresholds on the real binary, out of `make test`: the
# slow-reader attack across a veth pair between two network namespaces
# (root), then TestAttacks (slow readers, idle connections, log and
# ?pretty=1 floods, a bad certificate, smuggling). CI runs it after `make test`.
.PHONY: attack
attack:
	$(GO) vet -tags attack ./cmd/mcs
	$(GO) test -tags attack -count=1 -timeout 20m -v -run '^(TestSlowReadersVeth|TestAttacks)$$' ./cmd/mcs

# Go benchmarks, then the load test: mcs against a bare server writing the
# same bytes, with wrk on loopback (installed here when missing).
bench: wrk
	$(GO) test -run '^$$' -bench . -benchmem ./...
	bash hack/loadtest/run.sh
	$(MAKE) scale

# How memory and render times grow with pools: SCALE_N custom pools added to
# SCALE_TREE (cmd/dev/scale).
SCALE_TREE ?= $(firstword $(wildcard ../shared/realdata/aws) fixtures/cluster)
SCALE_N ?= 10,50,100
.PHONY: scale
scale:
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/mcs
	$(GO) run ./cmd/dev/scale -mcs $(BIN)/mcs -tree $(SCALE_TREE) -n $(SCALE_N)

# A boot storm (cmd/dev/storm, docs/performance.md): STORM_N nodes, 1,000 in
# flight, each a new TLS connection from one of 200 loopback addresses and
# one fetch, against mcs and a bare TLS server writing the same bytes,
# alternating; exits 1 when a goal is missed. STORM_ARGS adds flags
# (e.g. -rounds 5 -key p256). STORM_MCO_SRC (a clone of
# github.com/openshift/machine-config-operator) or STORM_MCO_BIN adds
# OpenShift's machine-config-server, reported, not gated.
STORM_TREE ?= $(SCALE_TREE)
STORM_N ?= 5000
STORM_ARGS ?=
STORM_MCO_SRC ?=
STORM_MCO_BIN ?=
.PHONY: storm
storm:
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/mcs ./cmd/dev/storm
	$(BIN)/storm -mcs $(BIN)/mcs -tree $(STORM_TREE) -n $(STORM_N) \
		$(if $(STORM_MCO_SRC),-mco-src $(STORM_MCO_SRC)) $(if $(STORM_MCO_BIN),-mco-bin $(STORM_MCO_BIN)) $(STORM_ARGS)

# MachineConfig creates through the real kube-apiserver and etcd (issue 46):
# no webhook, a webhook answering mcs admit's patch computed beforehand (the
# floor of any patching webhook), and mcs admit, alternating, new content
# each create, for the 168 KB rendered config and a small one
# (admit BenchmarkCreate; docs/performance.md).
ADMIT_BENCH_ARGS ?= -benchtime 30x -count 3
.PHONY: bench-admit
bench-admit: kube-tools
	$(GO) test ./admit -run '^$$' -bench 'BenchmarkCreate$$' $(ADMIT_BENCH_ARGS)

wrk:
	@command -v wrk >/dev/null || { $(APT_UPDATE) && $(SUDO) apt-get install -y -qq wrk; }

# promtool (Debian's prometheus package) checks and unit-tests the
# PrometheusRule manifests (internal/promrules); installed when missing.
.PHONY: promtool
promtool:
	@command -v promtool >/dev/null || { $(APT_UPDATE) && $(SUDO) apt-get install -y -qq prometheus >/dev/null; }

# kubectl runs docs/admission.md's "Try it on any Kubernetes" as written, and
# builds deploy/kubernetes/admit/ (its kustomize); installed when missing.
.PHONY: kubectl
kubectl:
	@command -v kubectl >/dev/null || { $(APT_UPDATE) && $(SUDO) apt-get install -y -qq kubectl >/dev/null; }

# Headless Chromium renders /status in the status page's browser test.
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null || { $(APT_UPDATE) && $(SUDO) apt-get install -y -qq chromium; }

# docs/status-page.png: /status of a demo server (a rendered pool, a pool
# whose newest render fails, refused nodes) as headless Chromium draws it.
.PHONY: screenshot
screenshot: chromium
	$(GO) test ./serve -run '^TestStatusPageInChromium$$' -count=1 -v -screenshot $(CURDIR)/docs/status-page.png

# Each fuzz target runs for FUZZTIME; `make test` runs the seed corpora only.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

# The server on loopback over plain HTTP, serving the fixture cluster.
run:
	@echo "mcs: building $(BIN)/mcs (the first build compiles every dependency: a few minutes; later builds take seconds)"
	$(GO) build -o $(BIN)/mcs ./cmd/mcs
	@echo "Try, in another terminal:"
	@echo "  curl -s '$(URL)/config/worker?pretty' | head -n 20"
	@echo "  curl -s $(URL)/status"
	@echo "What an old node gets (the skew stub) needs a pool an old client cannot read: run"
	@echo "  make run RUN_DIR=$(RUN_STUB_DIR)"
	@echo "and then"
	@echo "  curl -s -H 'Accept: application/vnd.coreos.ignition+json;version=3.2.0, */*;q=0.1' -A Ignition/v2.9.0 -D - $(URL)/config/worker"
	@echo "mcs: serving $(RUN_DIR) on $(URL) as process $$$$ (stop it with Ctrl-C, or kill that PID)"; \
	exec $(BIN)/mcs --dir $(RUN_DIR) --listen-plain $(LISTEN) --listen-tls ''

# The real Ignition clients, one per boot-image era (v2.27.0 … v2.0.0, spec-2 v0.35.0), for end-to-end tests; built only when missing.
.PHONY: ignition-clients
ignition-clients:
	GO=$(GO) hack/ignition-clients/build.sh $(TOOLS)/ignition

# The control plane the Kubernetes source's integration tests run (kube-apiserver
# v1.34.4, etcd v3.6.16, found there as envtest's KUBEBUILDER_ASSETS), built
# from the module proxy only when missing: minutes cold, instant after.
KUBE_TOOLS := $(TOOLS)/kube
.PHONY: kube-tools
kube-tools:
	GO=$(GO) hack/kube-tools/build.sh $(KUBE_TOOLS)

# The image: the static binary on an empty base (Containerfile), built with
# podman (installed when missing). IMAGE names it.
IMAGE ?= localhost/mcs:dev
image: container-engine
	GO=$(GO) hack/image/build.sh $(IMAGE)

# podman, and runc for hosts with hybrid cgroups, which crun refuses; the image
# test (e2e) builds and runs the image with them.
container-engine:
	@command -v podman >/dev/null && command -v runc >/dev/null || \
	  { $(APT_UPDATE) && $(SUDO) apt-get install -y -qq podman runc >/dev/null; }

# The rollback rehearsals' readers: Ignition v2.10.1 reading at its newest
# stable spec 3.2 (as the release before a 3.4-writing one reads) and
# v2.19.0's ParseCompatibleVersion at 3.4 (as OpenShift 4.14 to 4.18 read:
# the release before a 3.5-writing one), each printing what it read; built
# from the module proxy only when missing or changed.
.PHONY: rollback-reader
rollback-reader:
	GO=$(GO) hack/rollback-reader/build.sh $(TOOLS)/rollback

# OpenShift's own render controller (pkg/controller/render) against the
# webhook and a real API server: TestUpstreamRenderController runs the binary
# MCS_MCO_RENDER names, which this project does not build (upstream code is
# never built here or in CI; docs/admission.md says what the binary must do).
.PHONY: rehearse-mco-render
rehearse-mco-render: kube-tools rollback-reader
	@[ -x "$(MCS_MCO_RENDER)" ] || { echo "set MCS_MCO_RENDER to a render-controller binary (docs/admission.md)"; exit 1; }
	MCS_MCO_RENDER=$(abspath $(MCS_MCO_RENDER)) $(GO) test -count=1 -timeout 15m -v -run '^TestUpstreamRenderController$$' ./admit/apitest

clean:
	rm -rf $(BIN)

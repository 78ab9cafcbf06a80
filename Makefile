# mcs: `make run` serves fixtures/ on loopback, `make test` runs every check.
SHELL := /bin/bash
GO ?= go
BIN := bin
# Tools built from the module proxy live outside the repo, shared across clones.
TOOLS ?= $(HOME)/.cache/mcs-tools
FUZZTIME ?= 30s
LISTEN ?= 127.0.0.1:22624

.PHONY: all build test vet fmt-check run bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: fmt-check vet
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Each fuzz target runs for FUZZTIME; `make test` runs the seed corpora only.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

clean:
	rm -rf $(BIN)

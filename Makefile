# Sluice build, test and run targets. Everything a target needs it sets up
# itself: the nats-server comes from the Go module pinned in go.mod, and
# PostgreSQL from the machine's own server binaries.

GO        ?= go
BIN       := $(CURDIR)/bin
NATS_BIN  := $(BIN)/nats-server
FUZZTIME  ?= 10s
SERVICES  := $(notdir $(wildcard cmd/*))

export NATS_SERVER_BIN := $(NATS_BIN)

.PHONY: all build demo bench test test-go test-deploy fuzz lint clean

all: build

## build: every command into bin/, plus the pinned nats-server
build: $(NATS_BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

$(NATS_BIN): go.mod go.sum
	@mkdir -p $(BIN)
	$(GO) build -o $(NATS_BIN) github.com/nats-io/nats-server/v2

## demo: the whole pipeline on a generated corpus with poison documents and an embedder outage
demo: build
	$(BIN)/sluice demo $(DEMO_FLAGS)

## bench: the pipeline against its ceiling, a naive build and a River peer (BENCH_FLAGS=--quick for a smoke run); results in bench/results/latest.json
BENCH_FLAGS ?=
bench: build
	cd bench && $(GO) build -o $(BIN)/ ./cmd/sluice-river-peer
	$(BIN)/sluice-bench --bin-dir $(BIN) $(BENCH_FLAGS)

## test: unit and integration tests against real NATS and PostgreSQL, with the race detector, then short fuzz runs
test: test-go fuzz

test-go: $(NATS_BIN)
	$(GO) test -race -count=1 -timeout 15m ./...

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeChunkJob$$' -fuzztime $(FUZZTIME) ./pkg/messages/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeDeadLetter$$' -fuzztime $(FUZZTIME) ./pkg/messages/

## test-deploy: docker-compose.yml on a real Docker engine, and the testcontainers path, with images built locally (deploy/local/test-deploy.sh; as root, to install and start Docker)
COMPOSE_VERSION := v2.40.3
test-deploy:
	GO=$(GO) COMPOSE_VERSION=$(COMPOSE_VERSION) deploy/local/test-deploy.sh

## lint: formatting, go vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	cd bench && $(GO) vet ./...

clean:
	rm -rf $(BIN)

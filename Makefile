# Sluice build, test and run targets. Everything a target needs it sets up
# itself: the nats-server comes from the Go module pinned in go.mod, and
# PostgreSQL from the machine's own server binaries plus, for pgvector, a
# cached Debian root with PostgreSQL 17 and pgvector (pgvector-root).

GO        ?= go
BIN       := $(CURDIR)/bin
NATS_BIN  := $(BIN)/nats-server
PROMTOOL_BIN := $(BIN)/promtool
VERSITYGW_BIN := $(BIN)/versitygw
# FUZZTIME overrides every fuzz target's budget (see fuzz).
FUZZTIME  ?=
SERVICES  := $(notdir $(wildcard cmd/*))

export NATS_SERVER_BIN := $(NATS_BIN)
export PROMTOOL_BIN
export VERSITYGW_BIN

.PHONY: all build demo bench test test-go test-deploy pgvector-root fuzz lint chaos clean chromium extract-tools promtool s3-gateway

all: build

## build: every command into bin/, plus the pinned nats-server
build: $(NATS_BIN)
	$(GO) build -o $(BIN)/ ./cmd/...

$(NATS_BIN): go.mod go.sum
	@mkdir -p $(BIN)
	$(GO) build -o $(NATS_BIN) github.com/nats-io/nats-server/v2

## promtool: Prometheus's promtool, from the module pinned in tools/promtool, which checks and unit-tests the alert rules
promtool: $(PROMTOOL_BIN)

$(PROMTOOL_BIN): tools/promtool/go.mod tools/promtool/go.sum
	@mkdir -p $(BIN)
	cd tools/promtool && $(GO) build -tags remove_all_sd -o $(PROMTOOL_BIN) github.com/prometheus/prometheus/cmd/promtool

## s3-gateway: the Versity S3 gateway, from the module pinned in tools/versitygw, a real S3-compatible store (posix backend) that the object-storage source's tests run against
s3-gateway: $(VERSITYGW_BIN)

$(VERSITYGW_BIN): tools/versitygw/go.mod tools/versitygw/go.sum
	@mkdir -p $(BIN)
	cd tools/versitygw && $(GO) build -o $(VERSITYGW_BIN) github.com/versity/versitygw/cmd/versitygw

## demo: the whole pipeline on a generated corpus with poison documents and an embedder outage
demo: build extract-tools
	$(BIN)/sluice-dev demo $(DEMO_FLAGS)

## bench: the pipeline against its ceiling, a naive build and a River peer (BENCH_FLAGS=--quick for a smoke run); results in bench/results/latest.json, rendered into docs/benchmarks.md
BENCH_FLAGS ?=
bench: build extract-tools
	cd bench && $(GO) build -o $(BIN)/ ./cmd/sluice-river-peer
	$(BIN)/sluice-bench --bin-dir $(BIN) $(BENCH_FLAGS)
	cd bench && $(GO) run ./cmd/benchdoc

## test: unit and integration tests against real NATS and PostgreSQL, with the race detector, a short chaos convergence, then short fuzz runs (about 16 minutes on 2 idle cores)
test: test-go fuzz

# The tests build nothing as root themselves: test-go builds the pgvector
# root first when it can (as root, and unless PGVECTOR_DATABASE_URL names a
# server); otherwise the pgvector tests fail saying how to provide one.
PGVECTOR_SETUP := $(if $(PGVECTOR_DATABASE_URL),,$(if $(filter 0,$(shell id -u)),pgvector-root))

# The timeout is at least twice the slowest package's run time on a loaded
# 2-core machine (tests/chaos: 3 to 6 minutes), so that a slow machine
# fails on a defect, not on time. The packages of pure computation
# (PURE_PKGS: no goroutine, no sync, which archtest checks) and the corpus
# generators' shape tests, the benchmark's quick runs and the demo's
# bomb inflated to the default limit (UNRACED_TESTS,
# in files built with !race, which archtest checks) run without the race
# detector, which slows their tokenizing tenfold and their measured
# pipeline several fold, and has nothing to find in them; their
# concurrent use is raced in their callers' and their packages' tests.
PURE_PKGS := internal/content/chunk internal/content/compliance internal/content/secrets
UNRACED_PKGS := internal/dev/bench internal/dev/demo
UNRACED_TESTS := TestDocsCorpusShape TestGenerateReuseCorpus TestQuickRunReportsEverySection TestQuickQuotaRunStaysWithinTheQuota TestDocumentFilesExtractAsPoisonExpects
empty :=
space := $(empty) $(empty)
MODULE := github.com/sluicehq/sluice
# GOTEST runs go test -json, prints the results and the whole output of
# what failed, keeps the event stream in TEST_LOGS and ends with the
# slowest packages and tests (internal/dev/testlog).
GOTEST := GO=$(GO) $(GO) run ./internal/dev/testlog/cmd/gotest
TEST_LOGS ?= $(BIN)/test-logs
test-go: $(NATS_BIN) $(PROMTOOL_BIN) $(VERSITYGW_BIN) $(PGVECTOR_SETUP) chromium extract-tools
	$(GOTEST) -log $(TEST_LOGS)/race.json -- -race -count=1 -timeout 20m $(filter-out $(addprefix $(MODULE)/,$(PURE_PKGS)),$(shell $(GO) list ./...))
	$(GOTEST) -log $(TEST_LOGS)/pure.json -- -count=1 -timeout 10m $(addprefix ./,$(PURE_PKGS))
	$(GO) test -count=1 -timeout 10m -run '^($(subst $(space),|,$(UNRACED_TESTS)))$$' $(addprefix ./,$(UNRACED_PKGS))
	cd bench && $(GO) test -count=1 ./...

## chromium: the headless browser the console's browser tests drive (Debian's package)
chromium:
	@test -x /usr/bin/chromium || { apt-get update && apt-get install -y chromium; }

## extract-tools: poppler's pdfinfo, pdftotext and pdftoppm, which extract and render PDFs, Tesseract with its English data, which reads scans, and qpdf, which the extraction tests use (Debian's packages)
extract-tools:
	@test -x /usr/bin/pdftotext -a -x /usr/bin/pdftoppm -a -x /usr/bin/qpdf -a -x /usr/bin/tesseract -a -f /usr/share/tesseract-ocr/5/tessdata/eng.traineddata || { apt-get update && apt-get install -y poppler-utils qpdf tesseract-ocr tesseract-ocr-eng; }

## pgvector-root: the cached Debian trixie root with PostgreSQL 17 + pgvector 0.8 that tests start with chroot (as root; installs debootstrap if missing; minutes the first time)
pgvector-root:
	internal/dev/localenv/pgvector-root.sh

# Each target's budget is a count of executions, about ten seconds on two
# busy cores. A duration would race the fuzzing engine's own deadline
# (golang/go#75804, fixed in Go 1.27): under load it fails with "context
# deadline exceeded" having found nothing. FUZZTIME=60s or FUZZTIME=1000000x
# overrides them all.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeChunkJob$$' -fuzztime $(or $(FUZZTIME),40000x) ./pkg/messages/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeDeadLetter$$' -fuzztime $(or $(FUZZTIME),60000x) ./pkg/messages/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBackfillJob$$' -fuzztime $(or $(FUZZTIME),40000x) ./pkg/messages/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeParkedFile$$' -fuzztime $(or $(FUZZTIME),20000x) ./pkg/messages/
	$(GO) test -run '^$$' -fuzz '^FuzzReadJSONL$$' -fuzztime $(or $(FUZZTIME),5000x) ./internal/content/corpus/
	$(GO) test -run '^$$' -fuzz '^FuzzReduceHTML$$' -fuzztime $(or $(FUZZTIME),50000x) ./internal/content/corpus/
	$(GO) test -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(or $(FUZZTIME),100000x) ./internal/content/chunk/
	$(GO) test -run '^$$' -fuzz '^FuzzScan$$' -fuzztime $(or $(FUZZTIME),80000x) ./internal/content/secrets/

## chaos: the fault suite at length, with the race detector: live load while every service, nats-server, PostgreSQL and the embedder fail at random (CHAOS_DURATION, default 90s), each network fault with a 20s blackhole, the cluster scenarios (the leader killed twice, a minute apart, and the demo on a 3-node cluster), and the long scenarios built only with -tags chaos (a fleet sharing one quota, model and chunking changes under load, deletes under outages)
CHAOS_DURATION ?= 90s
chaos: $(NATS_BIN) $(PROMTOOL_BIN) $(VERSITYGW_BIN) $(PGVECTOR_SETUP) extract-tools
	$(GO) test -race -tags chaos -count=1 -timeout 40m -v ./tests/chaos/ -args -chaos.duration=$(CHAOS_DURATION) -chaos.blackhole=20s -chaos.leader-gap=1m
	$(GO) test -race -tags chaos -count=1 -timeout 20m -run '^TestDemoOnCluster$$' ./internal/dev/demo/

## test-deploy: docker-compose.yml on a real Docker engine, and the testcontainers path, with images built locally (deploy/local/test-deploy.sh; as root, to install and start Docker)
COMPOSE_VERSION := v2.40.3
test-deploy:
	GO=$(GO) COMPOSE_VERSION=$(COMPOSE_VERSION) deploy/local/test-deploy.sh

## lint: formatting, go vet and staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags chaos ./tests/chaos/ ./internal/dev/demo/
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags chaos ./tests/chaos/ ./internal/dev/demo/
	cd bench && $(GO) vet ./...

clean:
	rm -rf $(BIN)

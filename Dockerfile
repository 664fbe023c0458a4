# syntax=docker/dockerfile:1

# Two images from one file. The default target, sluice, is the product:
# the services and the operator CLI, and nothing else; docker-compose.yml
# picks the command. The embed-sim target is the embedding simulator the
# compose stack runs in place of a real provider, in an image of its own.
# The development commands (sluice-dev, sluice-bench) are in neither: they
# need a Go toolchain and PostgreSQL's server binaries.
#
#   docker build -t sluice .
#   docker build --target embed-sim -t sluice-embed-sim .

# Build: the sources and their modules, shared by both builds.
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .

# The product commands (internal/dev/archtest keeps this list whole: every
# command under cmd/ that is not a development tool).
FROM build AS build-sluice
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out && go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/sluice ./cmd/producer ./cmd/consumer ./cmd/outbox-relay ./cmd/dlq-replayer

FROM build AS build-embed-sim
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out && go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/embed-sim

# Runtime: alpine for busybox wget (the healthchecks) and CA certificates
# (a real embedding provider over HTTPS), poppler-utils and prlimit
# (util-linux), which extraction runs PDF tools under, and Tesseract with
# its English data, which reads scanned pages and images (another
# language is one more tesseract-ocr-data-<lang> package).
FROM alpine:3.22 AS runtime
RUN apk add --no-cache ca-certificates poppler-utils util-linux tesseract-ocr tesseract-ocr-data-eng \
 && addgroup -S -g 10001 sluice \
 && adduser -S -D -H -u 10001 -G sluice -s /sbin/nologin sluice
USER 10001:10001

# The embedding simulator: its API and metrics on 8089.
FROM runtime AS embed-sim
COPY --from=build-embed-sim /out/ /usr/local/bin/
EXPOSE 8089
CMD ["embed-sim"]

# The product, last so that it is what a plain docker build makes.
# Metrics, /healthz and /readyz: consumer 9101, outbox-relay 9102,
# dlq-replayer 9103.
FROM runtime AS sluice
COPY --from=build-sluice /out/ /usr/local/bin/
EXPOSE 9101 9102 9103
CMD ["sluice"]

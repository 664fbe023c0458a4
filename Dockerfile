# syntax=docker/dockerfile:1

# One image for every Sluice command; docker-compose.yml picks the command.

# Build: static binaries of ./cmd/... into /out.
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out && go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/...

# Runtime: alpine for busybox wget (the healthchecks) and CA certificates
# (a real embedding provider over HTTPS); the binaries need nothing else.
FROM alpine:3.22
RUN apk add --no-cache ca-certificates poppler-utils util-linux \
 && addgroup -S -g 10001 sluice \
 && adduser -S -D -H -u 10001 -G sluice -s /sbin/nologin sluice
COPY --from=build /out/ /usr/local/bin/
USER 10001:10001
# Metrics, /healthz and /readyz: consumer 9101, outbox-relay 9102,
# dlq-replayer 9103; embed-sim's API and metrics 8089.
EXPOSE 9101 9102 9103 8089
CMD ["sluice"]

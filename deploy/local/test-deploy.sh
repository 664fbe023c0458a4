#!/usr/bin/env bash
# `make test-deploy`: runs docker-compose.yml for real on a machine that may
# reach no container registry. Installs Debian's docker.io when docker is
# missing, starts dockerd when none answers (and stops it again at the
# end), builds the Compose v2 plugin from its Go module, builds local
# images for PostgreSQL + pgvector, NATS, Sluice and embed-sim, then runs
# the Go drivers with the images named in SLUICE_POSTGRES_IMAGE,
# SLUICE_NATS_IMAGE and SLUICE_TAG:
#
#   tests/deploytest TestDeploy   (SLUICE_TEST_DEPLOY=1) the compose stack
#   tests/deploytest TestDeployCluster  the cluster variant, one node killed
#   internal/dev/testenv TestContainers  the testcontainers path
#
# Everything is cached between runs: the Debian root at the path
# internal/dev/testenv uses, the plugin per version, and each image under a tag
# that hashes its inputs, so an unchanged image is never rebuilt.
#
# Environment: GO (default go), COMPOSE_VERSION (set by the Makefile),
# DEBIAN_MIRROR, XDG_CACHE_HOME.
set -euo pipefail

cd "$(dirname "$0")/../.."
GO=${GO:-go}
COMPOSE_VERSION=${COMPOSE_VERSION:?set COMPOSE_VERSION, e.g. v2.40.3 (the Makefile pins it)}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice
root=$cache/trixie-pg17
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"

step() { printf '\n== %s (%ss)\n' "$*" "$SECONDS"; }

apt_install() {
	if [ ! -f /var/lib/apt/lists/.sluice-updated ] || [ -z "$(ls /var/lib/apt/lists/*Packages 2>/dev/null)" ]; then
		apt-get update -qq
		touch /var/lib/apt/lists/.sluice-updated
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "test-deploy: $1 needs root; run 'sudo make test-deploy'." >&2
		exit 1
	fi
}

# --- Docker engine --------------------------------------------------------
step "docker engine"
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v busybox >/dev/null || missing+=(busybox-static)
command -v debootstrap >/dev/null || [ -x "$root/usr/lib/postgresql/17/bin/postgres" ] || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
	need_root "installing ${missing[*]}"
	echo "installing ${missing[*]} from Debian"
	apt_install "${missing[@]}"
fi
started_dockerd=
if ! docker version >/dev/null 2>&1; then
	need_root "starting dockerd"
	log=$cache/dockerd.log
	echo "starting dockerd (log: $log)"
	dockerd >"$log" 2>&1 &
	started_dockerd=$!
	trap 'kill "$started_dockerd" 2>/dev/null; wait "$started_dockerd" 2>/dev/null || true' EXIT
	for _ in $(seq 60); do
		docker version >/dev/null 2>&1 && break
		kill -0 "$started_dockerd" 2>/dev/null || { tail -n 20 "$log" >&2; exit 1; }
		sleep 0.5
	done
	docker version >/dev/null || { tail -n 20 "$log" >&2; exit 1; }
fi
docker version --format 'engine {{.Server.Version}} (API {{.Server.APIVersion}})'

# --- Compose v2 plugin ----------------------------------------------------
step "compose plugin $COMPOSE_VERSION"
plugins=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
plugin=$cache/compose/$COMPOSE_VERSION/docker-compose
if [ ! -x "$plugin" ]; then
	echo "building github.com/docker/compose/v2 $COMPOSE_VERSION from its Go module"
	mod=$(mktemp -d)
	# A module of its own, so that the project's go.mod stays untouched;
	# compose's own exclude directives apply only to a main module, so they
	# are repeated here.
	cat >"$mod/go.mod" <<MOD
module sluice.local/compose-plugin

go 1.25

require github.com/docker/compose/v2 $COMPOSE_VERSION

exclude (
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2
)
MOD
	mkdir -p "$(dirname "$plugin")"
	(cd "$mod" && GOFLAGS=-mod=mod $GO mod tidy >/dev/null 2>&1 &&
		GOFLAGS=-mod=mod CGO_ENABLED=0 $GO build -trimpath \
			-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
			-o "$plugin.tmp" github.com/docker/compose/v2/cmd)
	mv "$plugin.tmp" "$plugin"
	rm -rf "$mod"
fi
mkdir -p "$plugins"
cmp -s "$plugin" "$plugins/docker-compose" || cp "$plugin" "$plugins/docker-compose"
docker compose version

# --- Debian trixie root with PostgreSQL 17 + pgvector ---------------------
# The same root, path and convention as internal/dev/testenv: built in a temp
# dir and renamed into place, under flock on <root>.lock.
step "trixie root"
exec 9>"$root.lock"
flock 9
if [ ! -x "$root/usr/lib/postgresql/17/bin/postgres" ]; then
	need_root "debootstrap"
	tmp=$(mktemp -d "$root.tmp.XXXXXX")
	echo "debootstrap trixie with postgresql-17 and postgresql-17-pgvector into $root"
	if ! debootstrap --variant=minbase --include=postgresql-17,postgresql-17-pgvector \
		trixie "$tmp" "$mirror" >"$tmp.log" 2>&1; then
		tail -n 40 "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		exit 1
	fi
	rm -f "$tmp.log"
	rm -rf "$tmp/var/lib/postgresql/17/main" "$tmp/etc/postgresql/17/main" "$tmp"/var/cache/apt/archives/*.deb
	chmod 755 "$tmp"
	mv -T "$tmp" "$root"
fi

# --- Images -----------------------------------------------------------------
# tag_of DIR: a tag naming the content of a build context.
tag_of() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }
# build NAME CONTEXT DOCKERFILE [ARGS...]: builds sluice-local/NAME:<hash>
# unless it exists, and prints its reference.
build() {
	local name=$1 ctx=$2 file=$3
	shift 3
	cp "$file" "$ctx/Dockerfile"
	local ref
	ref=sluice-local/$name:$(tag_of "$ctx")
	if docker image inspect "$ref" >/dev/null 2>&1; then
		echo "$ref: cached" >&2
	else
		echo "$ref: building" >&2
		# The classic builder: BuildKit would fetch its Dockerfile frontend
		# from a registry.
		local out
		if ! out=$(DOCKER_BUILDKIT=0 docker build -q -t "$ref" "$@" "$ctx" 2>&1); then
			echo "$out" >&2
			exit 1
		fi
	fi
	echo "$ref"
}
# stage DIR: an empty build context.
stage() { rm -rf "$cache/context/$1"; mkdir -p "$cache/context/$1"; echo "$cache/context/$1"; }

step "image: trixie root"
base=sluice-local/trixie-pg17:$(sha256sum "$root/var/lib/dpkg/status" | cut -c1-16)
if ! docker image inspect "$base" >/dev/null 2>&1; then
	echo "$base: importing $root"
	tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . |
		docker import - "$base" >/dev/null
else
	echo "$base: cached"
fi
flock -u 9

step "image: postgres"
ctx=$(stage postgres)
cp deploy/local/postgres-entrypoint.sh "$ctx/"
echo "$base" >"$ctx/base"
postgres_image=$(build postgres "$ctx" deploy/local/postgres.Dockerfile --build-arg "BASE=$base")

step "image: nats"
ctx=$(stage nats)
CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w" -o "$ctx/nats-server" github.com/nats-io/nats-server/v2
cp "$(command -v busybox)" "$ctx/wget"
nats_image=$(build nats "$ctx" deploy/local/nats.Dockerfile)

# The product commands only, as ../../Dockerfile builds them
# (internal/dev/archtest keeps both lists whole).
step "image: sluice"
ctx=$(stage sluice)
CGO_ENABLED=0 GOFLAGS=-buildvcs=false $GO build -trimpath -ldflags "-s -w" -o "$ctx/bin/" ./cmd/sluice ./cmd/producer ./cmd/consumer ./cmd/outbox-relay ./cmd/dlq-replayer
cp "$(command -v busybox)" "$ctx/wget"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
sluice_image=$(build sluice "$ctx" deploy/local/sluice.Dockerfile)

step "image: embed-sim"
ctx=$(stage embed-sim)
CGO_ENABLED=0 GOFLAGS=-buildvcs=false $GO build -trimpath -ldflags "-s -w" -o "$ctx/bin/" ./cmd/embed-sim
cp "$(command -v busybox)" "$ctx/wget"
sim_image=$(build embed-sim "$ctx" deploy/local/embed-sim.Dockerfile)

# docker-compose.yml names the images sluice:${SLUICE_TAG} and
# sluice-embed-sim:${SLUICE_TAG}.
sluice_tag=local-${sluice_image##*:}
docker tag "$sluice_image" "sluice:$sluice_tag"
docker tag "$sim_image" "sluice-embed-sim:$sluice_tag"

# --- The drivers ------------------------------------------------------------
export SLUICE_POSTGRES_IMAGE=$postgres_image SLUICE_NATS_IMAGE=$nats_image SLUICE_TAG=$sluice_tag
# Ryuk, testcontainers' reaper, is an image this machine may not pull; the
# test terminates its containers itself.
export TESTCONTAINERS_RYUK_DISABLED=true SLUICE_TEST_DEPLOY=1
echo "SLUICE_POSTGRES_IMAGE=$SLUICE_POSTGRES_IMAGE SLUICE_NATS_IMAGE=$SLUICE_NATS_IMAGE SLUICE_TAG=$SLUICE_TAG"

step "testcontainers"
$GO test -count=1 -timeout 5m -run '^TestContainers$' -v ./internal/dev/testenv/

step "compose"
$GO test -count=1 -timeout 20m -run '^TestDeploy(Cluster)?$' -v ./tests/deploytest/

step "done"

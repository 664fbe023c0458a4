#!/usr/bin/env bash
# Builds the cached Debian trixie root holding PostgreSQL 17 and pgvector
# that the tests start with chroot (internal/dev/localenv/pgvector.go) and that
# `make test-deploy` reuses. Idempotent: an existing root is kept. Runs as
# root; installs debootstrap from the machine's apt sources when missing.
#
#   internal/dev/localenv/pgvector-root.sh [ROOT]
#
# ROOT defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/trixie-pg17.
set -euo pipefail

root=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/trixie-pg17}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -x "$root/usr/lib/postgresql/17/bin/postgres" ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "pgvector-root: building $root needs root (debootstrap, chroot)." >&2
	echo "Run 'sudo make pgvector-root', or set PGVECTOR_DATABASE_URL to a server with pgvector." >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null; then
	echo "pgvector-root: installing debootstrap"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

mkdir -p "$(dirname "$root")"
# The tests take the same lock (flock on <root>.lock) before reading the
# root, so a half-built one is never used and two builds never race.
exec 9>"$root.lock"
flock 9
if [ -x "$root/usr/lib/postgresql/17/bin/postgres" ]; then
	exit 0
fi
tmp=$(mktemp -d "$root.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "pgvector-root: debootstrap trixie with postgresql-17 and postgresql-17-pgvector into $root"
start=$SECONDS
debootstrap --variant=minbase --include=postgresql-17,postgresql-17-pgvector \
	trixie "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
	tail -n 40 "$tmp.log" >&2
	rm -f "$tmp.log"
	exit 1
}
rm -f "$tmp.log"
# The package's post-install creates the postgres user and a default
# cluster; the tests run their own throwaway clusters, so the default one
# and the downloaded packages only take space.
if ! chroot "$tmp" getent passwd postgres >/dev/null; then
	echo "pgvector-root: the root has no postgres user after the package install" >&2
	exit 1
fi
rm -rf "$tmp/var/lib/postgresql/17/main" "$tmp/etc/postgresql/17/main" "$tmp"/var/cache/apt/archives/*.deb
chmod 755 "$tmp"
mv -T "$tmp" "$root"
trap - EXIT
echo "pgvector-root: built $root in $((SECONDS - start))s"

#!/bin/sh
# Entrypoint of the local PostgreSQL image (see postgres.Dockerfile): the
# subset of the official postgres image's contract that Sluice's compose
# file and tests use. On an empty $PGDATA it runs initdb for $POSTGRES_USER
# (default postgres) with $POSTGRES_PASSWORD, creates $POSTGRES_DB on a
# temporary server that listens on the Unix socket only, then starts the
# real server on every address. Host connections authenticate with
# scram-sha-256, or as POSTGRES_HOST_AUTH_METHOD says (e.g. trust).
set -eu

if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi
if [ "$1" != postgres ]; then
	exec "$@"
fi

user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
		echo "postgres: set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust for a passwordless server" >&2
		exit 1
	fi
	pwfile=$(mktemp)
	printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
	initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$auth" \
		--encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
	rm -f "$pwfile"
	echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
	pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start
	if [ "$db" != postgres ]; then
		psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -q \
			-c "CREATE DATABASE \"$db\""
	fi
	pg_ctl -D "$PGDATA" -w -m fast stop
fi

exec "$@" -c listen_addresses='*'

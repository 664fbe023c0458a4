# PostgreSQL 17 with pgvector for machines that cannot pull
# pgvector/pgvector: the base is the Debian trixie root of internal/dev/testenv
# (postgresql-17, postgresql-17-pgvector), imported by test-deploy.sh as
# sluice-local/trixie-pg17. Elsewhere, use the public image.
ARG BASE
FROM ${BASE}
ENV PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PGDATA=/var/lib/postgresql/data
RUN mkdir -p "$PGDATA" /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
 && chmod 700 "$PGDATA" && chmod 2777 /var/run/postgresql
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD pg_isready -h 127.0.0.1 -U "${POSTGRES_USER:-postgres}" || exit 1
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]

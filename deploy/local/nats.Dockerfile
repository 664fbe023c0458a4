# nats-server for machines that cannot pull the official image: the static
# binary of the version pinned in go.mod, and busybox's wget for the
# healthcheck, as in nats:2.11-alpine. No ENTRYPOINT: the first word of the
# command names the binary, which the official image's entrypoint accepts
# too.
FROM scratch
COPY nats-server wget /usr/local/bin/
ENV PATH=/usr/local/bin
EXPOSE 4222 6222 8222
CMD ["nats-server", "--jetstream"]

# The embedding simulator's image from a binary built on the host, for
# machines that cannot pull the golang and alpine bases of
# ../../Dockerfile (its embed-sim target): /usr/local/bin/embed-sim,
# static, run as uid 10001, with busybox's wget for the healthcheck. The
# build context holds bin/embed-sim (CGO_ENABLED=0 go build -trimpath -o
# bin/ ./cmd/embed-sim) and wget (a static busybox); test-deploy.sh stages
# it.
FROM scratch
COPY wget /bin/wget
COPY bin/ /usr/local/bin/
ENV PATH=/usr/local/bin:/bin
USER 10001:10001
EXPOSE 8089
CMD ["embed-sim"]

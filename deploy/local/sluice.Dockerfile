# Sluice's image from binaries built on the host, for machines that cannot
# pull the golang and alpine bases of ../../Dockerfile: the same product
# commands in /usr/local/bin, static, run as uid 10001, with busybox's wget
# for the healthchecks and the host's CA certificates. The build context
# holds bin/ (the product commands, built as test-deploy.sh builds them),
# wget (a static busybox) and ca-certificates.crt; test-deploy.sh stages
# it. The simulator has an image of its own (embed-sim.Dockerfile).
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY wget /bin/wget
COPY bin/ /usr/local/bin/
ENV PATH=/usr/local/bin:/bin
USER 10001:10001
EXPOSE 9101 9102 9103
CMD ["sluice"]

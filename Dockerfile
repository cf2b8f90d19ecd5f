# syntax=docker/dockerfile:1
#
# odwatch container image: a static binary on an empty base, running as an
# unprivileged user, with its Pebble state on a volume.
#
#   docker build -t odwatch .
#   docker run --rm odwatch
#   docker run --rm --network host -v "$PWD/deploy/examples/odwatch-local.yaml:/etc/odwatch/odwatch.yaml:ro" \
#     -v odwatch-state:/var/lib/odwatch odwatch run --config /etc/odwatch/odwatch.yaml
#
# The first run prints the commands (the image's default); the second
# watches the topic payroll of a Kafka on the host at localhost:9092 (odwatch
# dev-broker's default address, or scripts/kafka-local.sh), status page on
# http://127.0.0.1:9464/. deploy/compose_test.go checks that these mounts and
# paths exist.
#
# Tested against Apache Kafka 4.4.0 (KRaft), the release of
# internal/kafkatest/pom.xml and of docker-compose.yml's broker.

# Build stage: the Go version matches go.mod; pinned by exact tag so a rebuild
# gives the same toolchain.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first, so a code change does not invalidate the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO off: the binary must run on an empty base image (Pebble and kafka-go are
# pure Go). -trimpath and no symbol table keep the image small and
# reproducible.
# The context has no .git, so `odwatch --version` learns the version and
# commit from these (docker build --build-arg ODWATCH_COMMIT=$(git rev-parse HEAD)).
ARG ODWATCH_VERSION=dev
ARG ODWATCH_COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath \
    -ldflags="-s -w -X main.version=${ODWATCH_VERSION} -X main.commit=${ODWATCH_COMMIT}" -o /out/odwatch ./cmd/odwatch
# The state directory is created here because the final image has no shell;
# a named volume mounted on it inherits this ownership on first use.
RUN mkdir -p /out/state /out/secrets \
 && printf 'odwatch:x:65532:65532:odwatch:/var/lib/odwatch:/sbin/nologin\n' > /out/passwd \
 && printf 'odwatch:x:65532:\n' > /out/group

# Final stage: nothing but the binary, CA roots (for --tls against a real
# cluster) and a passwd entry for the non-root user.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build --chown=65532:65532 /out/state /var/lib/odwatch
# Where the compose stack's odwatch-secrets service writes the web config: a
# named volume mounted here takes this ownership on first use.
COPY --from=build --chown=65532:65532 /out/secrets /etc/odwatch/secrets
COPY --from=build /out/odwatch /usr/local/bin/odwatch
USER 65532:65532
# The image has no /tmp; temporary directories (odwatch demo without
# --state-dir) go to the state volume instead.
ENV TMPDIR=/var/lib/odwatch
VOLUME ["/var/lib/odwatch"]
# Prometheus metrics, /healthz and /readyz (set --metrics-addr 0.0.0.0:9464
# inside a container; the default 127.0.0.1 is unreachable from outside).
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/odwatch"]
# The image holds no config: without arguments it prints the commands; run
# needs a mounted config (or flags), as in the example above.
CMD ["help"]

# syntax=docker/dockerfile:1
#
# odwatch container image: a static binary on an empty base, running as an
# unprivileged user, with its Pebble state on a volume.
#
#   docker build -t odwatch:dev .
#   docker run --rm -v odwatch-state:/var/lib/odwatch -p 9464:9464 odwatch:dev \
#     run --config /etc/odwatch/odwatch.yaml
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
RUN mkdir -p /out/state \
 && printf 'odwatch:x:65532:65532:odwatch:/var/lib/odwatch:/sbin/nologin\n' > /out/passwd \
 && printf 'odwatch:x:65532:\n' > /out/group

# Final stage: nothing but the binary, CA roots (for --tls against a real
# cluster) and a passwd entry for the non-root user.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build --chown=65532:65532 /out/state /var/lib/odwatch
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
CMD ["run", "--config", "/etc/odwatch/odwatch.yaml"]

# syntax=docker/dockerfile:1
#
# Tasker worker (Swift) — multi-stage image.
#   docker build -t tasker-worker-swift .
#   docker run --rm -e DATABASE_URL=postgresql://... tasker-worker-swift          # run
#   docker run --rm -e DATABASE_URL=... tasker-worker-swift migrate --database-url ...  # migrate
# Local stack: docker compose up (see docker-compose.yml).

ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------
FROM ${SWIFT_IMAGE} AS builder

RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

ENV SWIFT_DETERMINISTIC_HASHING=1
WORKDIR /build

# Resolve dependencies in their own layer (Package.resolved is optional: the glob
# matches nothing when it is absent).
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve

COPY . .
RUN swift build -c release --static-swift-stdlib --product tasker-worker \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/tasker-worker" /out/bin/tasker-worker \
    && mkdir -p config migrations \
    && cp -R config /out/config \
    && cp -R migrations /out/migrations

# ---------------------------------------------------------------------------
# Runtime
# ---------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE} AS runtime

RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends libpq5 ca-certificates curl tzdata libstdc++6 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 tasker \
    && useradd --system --uid 10001 --gid tasker --home-dir /app --shell /usr/sbin/nologin tasker

WORKDIR /app
COPY --from=builder /out/bin/tasker-worker /usr/local/bin/tasker-worker
COPY --from=builder --chown=root:root /out/config /app/config
COPY --from=builder --chown=root:root /out/migrations /app/migrations

ENV TASKER_ENV=production \
    TASKER_MIGRATIONS_DIR=/app/migrations

USER tasker:tasker

# 8081: HTTP (health, metrics), 9191: gRPC
EXPOSE 8081 9191

HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD curl -fsS http://localhost:8081/health || exit 1

ENTRYPOINT ["tasker-worker"]
CMD ["run"]

# syntax=docker/dockerfile:1
#
# Tasker worker (Swift) — multi-stage image.
#   docker build -t tasker-worker-swift .
#   docker run --rm -e TASKER_ENV=production -e DATABASE_URL=postgresql://... -p 8081:8081 -p 9191:9191 tasker-worker-swift
#   docker run --rm -e TASKER_ENV=production -e DATABASE_URL=postgresql://... tasker-worker-swift migrate
# Local stack: docker compose --profile server up --build (see docker-compose.yml); on RabbitMQ:
# docker compose --profile rabbitmq up --build (also builds the `orchestration` target).
#
# The build and start steps live in scripts that CI also runs (README, "Container"):
#   scripts/container/build        builder stage: release build (--static-swift-stdlib) + staging into /out
#   scripts/container/entrypoint   ENTRYPOINT: checks TASKER_ENV / DATABASE_URL, optional migration, exec
#   scripts/container/healthcheck  HEALTHCHECK: GET /health
# Tests/TaskerSystemTests/ContainerFilesTests.swift parses this file and checks it against the repo.

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
RUN scripts/container/build /out

# ---------------------------------------------------------------------------
# Companion orchestration (`docker build --target orchestration .`; docker-compose.yml's `rabbitmq`
# and `production` profiles): `tasker-dev orchestrate`, a development tool, in the builder image (the release objects
# of the step above are reused). Not the production image: a plain `docker build .` builds the
# runtime stage below and skips this one.
# ---------------------------------------------------------------------------
FROM builder AS orchestration
RUN swift build -c release --static-swift-stdlib --product tasker-dev \
    && install -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/tasker-dev" /usr/local/bin/tasker-dev
ENTRYPOINT ["/usr/local/bin/tasker-dev"]
CMD ["orchestrate"]

# ---------------------------------------------------------------------------
# Runtime
# ---------------------------------------------------------------------------
FROM ${RUNTIME_IMAGE} AS runtime

# libpq5 (the database client), libstdc++6 and zlib1g (needed by the statically linked Swift
# runtime and Foundation), ca-certificates (TLS to the database), curl (the health check), tzdata.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends libpq5 libstdc++6 zlib1g ca-certificates curl tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 tasker \
    && useradd --system --uid 10001 --gid tasker --home-dir /app --shell /usr/sbin/nologin tasker

# /usr/local/bin/{tasker-worker,tasker-entrypoint,tasker-healthcheck} and
# /app/{config/tasker,config/tasks,migrations}, owned by root: read-only for the worker.
COPY --from=builder /out/ /

WORKDIR /app
ENV TASKER_TEMPLATE_PATH=/app/config/tasks \
    TASKER_MIGRATIONS_DIR=/app/migrations \
    TASKER_LOG_FORMAT=json

USER tasker:tasker

# 8081: REST (health, metrics, templates), 9191: gRPC
EXPOSE 8081 9191

HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/tasker-healthcheck"]

# TASKER_ENV and DATABASE_URL are required (the entrypoint refuses to start without them).
ENTRYPOINT ["/usr/local/bin/tasker-entrypoint"]
CMD ["run"]

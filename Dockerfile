# syntax=docker/dockerfile:1
# idnode: one static-ish binary, `idnode serve`.
#
#   docker build -t idnode:local .
#   docker run --rm -p 5000:5000 -p 8099:8099 -e IDNODE_ADMIN_PASSWORD=... idnode:local
#
# Ports: 5000 public Keystone v3 API, 8099 ops (/health, /ready, /metrics), 7000 raft peers.
# Clusters: see cluster-examples/.

# ---- build --------------------------------------------------------------------------------
FROM rust:1-bookworm AS builder
# rocksdb's bindings are generated with bindgen (libclang) and the C++ library is compiled here.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libclang-dev clang cmake pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p idnode --bin idnode \
 && install -D -m 0755 target/release/idnode /out/idnode

# ---- runtime ------------------------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates curl libstdc++6 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/idnode --shell /usr/sbin/nologin idnode \
 && mkdir -p /var/lib/idnode \
 && chown idnode:idnode /var/lib/idnode \
 && chmod 0700 /var/lib/idnode
COPY --from=builder /out/idnode /usr/local/bin/idnode
USER idnode
WORKDIR /var/lib/idnode
VOLUME ["/var/lib/idnode"]
ENV IDNODE_DATA_DIR=/var/lib/idnode \
    IDNODE_LISTEN=0.0.0.0:5000 \
    IDNODE_OPS_LISTEN=0.0.0.0:8099 \
    IDNODE_PEER_LISTEN=0.0.0.0:7000
EXPOSE 5000 8099 7000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8099/health || exit 1
ENTRYPOINT ["idnode", "serve"]

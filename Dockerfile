# idnode's container image: the `idnode` binary on a minimal Debian bookworm, as user `idnode`.
#
# Built by scripts/build-image, never from the repository root: no registry is needed, so the
# base is `idnode-base:bookworm`, imported from a debootstrap rootfs (Debian's own packages:
# minbase + libstdc++6, libgcc-s1, ca-certificates), and the build context holds only the
# binary the host already built (no Rust toolchain or second RocksDB build in here).
#
#   scripts/build-image
#   docker run --rm -p 127.0.0.1:5000:5000 -p 127.0.0.1:8099:8099 \
#       -e IDNODE_ADMIN_PASSWORD=... -v idnode-data:/var/lib/idnode idnode:local
#
# Ports: 5000 public Keystone v3 API, 8099 ops (/health, /ready, /metrics), 7000 raft peers.
# Clusters: see cluster-examples/. Works with the classic builder and with BuildKit.
ARG BASE=idnode-base:bookworm
FROM ${BASE}

# The unprivileged user (no login shell, no password) and its data directory, private to it.
RUN groupadd --system --gid 10001 idnode \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/idnode \
        --shell /usr/sbin/nologin idnode \
 && mkdir -p /var/lib/idnode \
 && chown idnode:idnode /var/lib/idnode \
 && chmod 0700 /var/lib/idnode

COPY idnode /usr/local/bin/idnode

LABEL org.idnode.image=idnode \
      org.opencontainers.image.title=idnode \
      org.opencontainers.image.description="Replicated identity service (OpenStack Keystone v3 API)"
USER idnode
WORKDIR /var/lib/idnode
VOLUME ["/var/lib/idnode"]
ENV IDNODE_DATA_DIR=/var/lib/idnode \
    IDNODE_LISTEN=0.0.0.0:5000 \
    IDNODE_OPS_LISTEN=0.0.0.0:8099 \
    IDNODE_PEER_LISTEN=0.0.0.0:7000
EXPOSE 5000 8099 7000
# /health on the ops listener, with bash's /dev/tcp (no curl in the image).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${IDNODE_OPS_LISTEN##*:} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]"]
ENTRYPOINT ["idnode", "serve"]

# dacd as a container image (docs/deployment.md, "In a container"). Two stages: the package is
# built and packed as for any install (npm ci, npm pack: dist/ and the prebuilt addon and LevelDB
# binding for linux-x64), then installed into a slim Node 20 image, which needs no compiler since
# the install keeps the prebuilt binaries made from the same sources.
FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY bin/ bin/
COPY scripts/ scripts/
COPY native/ native/
COPY src/ src/
COPY tsconfig.json tsconfig.build.json ./
COPY config/ config/
COPY systemd/ systemd/
COPY docs/ docs/
COPY ops/ ops/
COPY LICENSE CHANGELOG.md README.md ./
RUN npm ci --no-audit --no-fund && npm pack --pack-destination /pkg && mv /pkg/dacd-*.tgz /pkg/dacd.tgz

FROM node:20-slim
# bzip2: reference archives (dacd load --from-reference, dump --format reference).
RUN apt-get update && apt-get install -y --no-install-recommends bzip2 && rm -rf /var/lib/apt/lists/*
COPY --from=build /pkg/dacd.tgz /tmp/dacd.tgz
# npm 11 approves a tarball's install script by its path; npm 10 (Node 20's) runs it anyway.
RUN npm install -g --omit=dev --no-audit --no-fund --prefix /usr/local \
      --allow-scripts=/tmp/dacd.tgz,classic-level /tmp/dacd.tgz \
    && rm /tmp/dacd.tgz && npm cache clean --force
RUN useradd --system --user-group --no-create-home --shell /usr/sbin/nologin dacd \
    && mkdir -p /var/lib/dacd /var/lib/dacd-claims /etc/dacd \
    && chown dacd:dacd /var/lib/dacd /var/lib/dacd-claims && chmod 0700 /var/lib/dacd /var/lib/dacd-claims
# As the systemd unit (systemd/dacd.service): fewer malloc arenas; the store and the claims journal
# in their volumes whatever the file says.
ENV MALLOC_ARENA_MAX=2 \
    DACD_DATA_DIR=/var/lib/dacd \
    DACD_CLAIMS_JOURNAL_PATH=/var/lib/dacd-claims/claims.journal \
    DACD_METRICS_PORT=9464 \
    DACD_METRICS_HOST=0.0.0.0
# The store, the claims journal (kept apart so that restoring a store never replaces it) and the
# configuration with the key (mounted read-only, the key file 0600 owned by the dacd user).
VOLUME ["/var/lib/dacd", "/var/lib/dacd-claims", "/etc/dacd"]
USER dacd
EXPOSE 9464
# Ready means caught up and the gateway answering (/readyz); a long catch-up at first start is
# what the start period allows for.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10m --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.DACD_METRICS_PORT || 9464) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# A larger young generation and initial old space, as the unit gives them: on node's command line,
# since Node refuses --initial-old-space-size in NODE_OPTIONS.
ENTRYPOINT ["node", "--max-semi-space-size=64", "--initial-old-space-size=256", "/usr/local/bin/dacd", "run"]
CMD ["--config", "/etc/dacd/dacd.yaml"]

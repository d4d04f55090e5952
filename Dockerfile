# Assay on CPU (the default provider): onnxruntime-node's CPU build, on the current Node LTS.
#
#   docker build -t assay .
#   docker run -p 8080:8080 -v "$PWD/models:/models" -e ASSAY_API_KEYS=... assay
#
# docs/operations.md "CPU image (Dockerfile)" has the steps; Dockerfile.gpu is the CUDA image.
#
# Two stages: the build stage installs every dependency (better-sqlite3 compiles where no prebuilt
# binary fits: python3, make, g++), compiles TypeScript to dist/, drops the dev dependencies and
# every other platform's onnxruntime binaries; the runtime stage is Node's slim image with the
# compiled code and the production dependencies only: no TypeScript, no tsx, no compiler.
ARG NODE_IMAGE=node:26-bookworm-slim

# ---------------------------------------------------------------- build
FROM ${NODE_IMAGE} AS build
# The platform being built (amd64, arm64): onnxruntime-node keeps only its linux binaries.
ARG TARGETARCH=amd64
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY models/registry.json models/shapes.json models/README.md ./models/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && apt-get clean
# npm ci runs the package's prepare script: tsc -p tsconfig.build.json → dist/. allowScripts keeps
# onnxruntime-node's install script (a CUDA download) from running: the CPU build is in the package.
RUN npm ci \
 && test -f dist/cli.js \
 && npm prune --omit=dev \
 && npm cache clean --force \
 && ARCH="$(if [ "$TARGETARCH" = arm64 ]; then echo arm64; else echo x64; fi)" \
 && cd node_modules/onnxruntime-node/bin/napi-v6 \
 && rm -rf darwin win32 \
 && find linux -mindepth 1 -maxdepth 1 ! -name "$ARCH" -exec rm -rf {} + \
 && test "$(ls)" = linux && test "$(ls linux)" = "$ARCH"

# ---------------------------------------------------------------- runtime
FROM ${NODE_IMAGE} AS runtime
RUN groupadd --system --gid 10001 assay \
 && useradd --system --uid 10001 --gid assay --home-dir /app --shell /usr/sbin/nologin assay \
 && mkdir -p /app /models /data && chown assay:assay /app /models /data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/dist ./dist
COPY --from=build /app/models ./models

USER assay
# Models come from a volume (docs/models.md "Real models"): nothing model-sized is baked in.
VOLUME ["/models"]
# Batch jobs keep their inputs and results here until read or expired (docs/batches.md).
ENV NODE_ENV=production \
    ASSAY_DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8080 \
    ASSAY_PROVIDER=cpu \
    ASSAY_REGISTRY=/models/registry.json \
    ASSAY_LOG_FORMAT=json
EXPOSE 8080

# /readyz: 200 once the default model is loaded and the server takes work (docs/operations.md#probes).
# The image has no curl; Node's fetch does the probe. start-period covers the model load.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# SIGTERM from `docker stop` / Kubernetes starts the server's graceful drain.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/assay.js"]
CMD ["serve"]

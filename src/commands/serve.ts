// assay serve: the HTTP API on a port, with the registry's default model loaded at startup.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ExecutionProvider } from '../engine/index.js';
import { generateKey, keysFromList, loadKeysFile, type ApiKey } from '../api/auth.js';
import { createModelPool, type PoolLog } from '../service/model-pool.js';
import { DEFAULT_BODY_LIMIT, DEFAULT_DEADLINE_MS, buildServer, type AssayServer } from '../api/server.js';
import { DEFAULT_RATE_LIMITS } from '../api/rate-limit.js';
import { loadRegistry } from '../registry.js';
import { registryFile } from './common.js';
import { DEFAULTS } from '../engine/config.js';

const HELP = `Usage: assay serve [options]

Serves the question-evaluation API (POST /v1/systemone, GET /v1/models, GET /openapi.json,
GET /healthz, GET /metrics). Every option can also be set by the environment variable shown.

  --host H                 HOST                       listen address (default 127.0.0.1)
  --port N                 PORT                       listen port (default 8080; 0 = any free port)
  --registry FILE          ASSAY_REGISTRY             model registry (default models/registry.json)
  --keys-file FILE         ASSAY_KEYS_FILE            JSON of SHA-256 key hashes with per-key models and limits
                           ASSAY_API_KEYS             comma-separated keys (environment only)
  --rpm N                  ASSAY_RATE_RPM             requests per minute per key (default ${DEFAULT_RATE_LIMITS.requestsPerMinute})
  --tps N                  ASSAY_RATE_TPS             input tokens per second per key (default ${DEFAULT_RATE_LIMITS.inputTokensPerSecond})
  --threads N              ASSAY_THREADS              onnxruntime threads per model (default 0 = one per core)
  --prefix-cache-bytes N   ASSAY_PREFIX_CACHE_BYTES   prefix KV cache size (default ${DEFAULTS.prefixCacheBytes}; 0 = off)
  --prefill-chunk N        ASSAY_PREFILL_CHUNK        prefill long prompts in chunks of N tokens (default ${DEFAULTS.prefillChunk}; 0 = one pass)
  --max-queue N            ASSAY_MAX_QUEUE            requests waiting per model before 529 (default ${DEFAULTS.maxQueue})
  --deadline-ms N          ASSAY_DEADLINE_MS          per-request deadline before 408 (default ${DEFAULT_DEADLINE_MS})
  --body-limit N           ASSAY_BODY_LIMIT           largest request body in bytes before 413 (default ${DEFAULT_BODY_LIMIT})
  --provider cpu|cuda      ASSAY_PROVIDER             execution provider (default cpu)
  --prefix-cache-scope key|shared
                           ASSAY_PREFIX_CACHE_SCOPE   key (default): each API key reuses only its own cached prefixes;
                                                      shared: one prefix cache across keys (a key can then time
                                                      whether another key sent a state recently)
  --server-timing-engine   ASSAY_SERVER_TIMING_ENGINE=1  add the engine's time to Server-Timing (default off)
  --no-graph-rewrite       ASSAY_GRAPH_REWRITE=0      run every export as is, without the load-time graph rewrite
                                                      (per model: "graph_rewrite": false in the registry)
  --log-level L            ASSAY_LOG_LEVEL            fatal|error|warn|info|debug|trace|silent (default info)
  -h, --help                                          this text

With no key configured, a key is generated for this run and printed once.
SIGTERM / SIGINT: stop accepting, finish in-flight requests, exit 0.`;

export interface ServeConfig {
  host: string;
  port: number;
  registryFile: string;
  keys: ApiKey[];
  generatedKey?: string;
  requestsPerMinute: number;
  inputTokensPerSecond: number;
  threads: number;
  prefixCacheBytes: number;
  prefillChunk: number;
  maxQueue: number;
  deadlineMs: number;
  bodyLimit: number;
  provider: ExecutionProvider;
  graphRewrite: boolean;
  prefixCacheScope: 'key' | 'shared';
  serverTimingEngine: boolean;
  logLevel: string;
}

class UsageError extends Error {}

function int(v: string | undefined, name: string, fallback: number, min = 0): number {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer >= ${min}, got '${v}'`);
  return n;
}

/** Flags win over the environment, which wins over the defaults. */
export function serveConfig(argv: string[], env: Record<string, string | undefined>): ServeConfig | 'help' {
  const { values: f } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      registry: { type: 'string' },
      'keys-file': { type: 'string' },
      rpm: { type: 'string' },
      tps: { type: 'string' },
      threads: { type: 'string' },
      'prefix-cache-bytes': { type: 'string' },
      'prefill-chunk': { type: 'string' },
      'max-queue': { type: 'string' },
      'deadline-ms': { type: 'string' },
      'body-limit': { type: 'string' },
      provider: { type: 'string' },
      'no-graph-rewrite': { type: 'boolean' },
      'prefix-cache-scope': { type: 'string' },
      'server-timing-engine': { type: 'boolean' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (f.help) return 'help';
  const provider = f.provider ?? env.ASSAY_PROVIDER ?? 'cpu';
  if (provider !== 'cpu' && provider !== 'cuda') throw new UsageError(`--provider must be cpu or cuda, got '${provider}'`);

  const scope = f['prefix-cache-scope'] ?? env.ASSAY_PREFIX_CACHE_SCOPE ?? 'key';
  if (scope !== 'key' && scope !== 'shared') throw new UsageError(`--prefix-cache-scope must be key or shared, got '${scope}'`);
  const keysFile = f['keys-file'] ?? env.ASSAY_KEYS_FILE;
  const keys = [...(keysFile ? loadKeysFile(keysFile) : []), ...keysFromList(env.ASSAY_API_KEYS ?? '')];
  let generatedKey: string | undefined;
  if (keys.length === 0) {
    generatedKey = generateKey();
    keys.push(...keysFromList(generatedKey));
  }
  return {
    host: f.host ?? env.HOST ?? '127.0.0.1',
    port: int(f.port ?? env.PORT, '--port', 8080),
    registryFile: registryFile(f.registry, env),
    keys,
    generatedKey,
    requestsPerMinute: int(f.rpm ?? env.ASSAY_RATE_RPM, '--rpm', DEFAULT_RATE_LIMITS.requestsPerMinute, 1),
    inputTokensPerSecond: int(f.tps ?? env.ASSAY_RATE_TPS, '--tps', DEFAULT_RATE_LIMITS.inputTokensPerSecond, 1),
    threads: int(f.threads ?? env.ASSAY_THREADS, '--threads', DEFAULTS.threads),
    prefixCacheBytes: int(f['prefix-cache-bytes'] ?? env.ASSAY_PREFIX_CACHE_BYTES, '--prefix-cache-bytes', DEFAULTS.prefixCacheBytes),
    prefillChunk: int(f['prefill-chunk'] ?? env.ASSAY_PREFILL_CHUNK, '--prefill-chunk', DEFAULTS.prefillChunk),
    maxQueue: int(f['max-queue'] ?? env.ASSAY_MAX_QUEUE, '--max-queue', DEFAULTS.maxQueue),
    deadlineMs: int(f['deadline-ms'] ?? env.ASSAY_DEADLINE_MS, '--deadline-ms', DEFAULT_DEADLINE_MS, 1),
    bodyLimit: int(f['body-limit'] ?? env.ASSAY_BODY_LIMIT, '--body-limit', DEFAULT_BODY_LIMIT, 1),
    provider,
    prefixCacheScope: scope,
    serverTimingEngine: f['server-timing-engine'] === true || ['1', 'true', 'yes', 'on'].includes((env.ASSAY_SERVER_TIMING_ENGINE ?? '').toLowerCase()),
    graphRewrite: !f['no-graph-rewrite'] && !['0', 'false', 'no', 'off'].includes((env.ASSAY_GRAPH_REWRITE ?? '').toLowerCase()),
    logLevel: f['log-level'] ?? env.ASSAY_LOG_LEVEL ?? 'info',
  };
}

export async function run(argv: string[]): Promise<number> {
  let config: ServeConfig | 'help';
  try {
    config = serveConfig(argv, process.env);
  } catch (e) {
    process.stderr.write(`assay serve: ${(e as Error).message}\n\n${HELP}\n`);
    return 2;
  }
  if (config === 'help') {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  let registry;
  try {
    registry = loadRegistry(config.registryFile);
  } catch (e) {
    process.stderr.write(`assay serve: ${(e as Error).message}\n`);
    return 2;
  }

  // The server never writes models: a synthetic model the registry declares is generated by
  // `assay models synth` (npm start runs it first).
  const first = registry.models[registry.default];
  if (first?.synthetic && !existsSync(join(registry.file, '..', first.path, 'assay.json'))) {
    process.stderr.write(`assay serve: the default model ${registry.default} is synthetic and its folder ${join(registry.file, '..', first.path)} is missing: run \`assay models synth\` first (npm start does)\n`);
    return 1;
  }

  let app: AssayServer | undefined;
  const log: PoolLog = {
    info: (o, m) => app?.log.info(o, m),
    warn: (o, m) => app?.log.warn(o, m),
  };
  const pool = createModelPool(
    registry,
    {
      provider: config.provider,
      threads: config.threads,
      prefixCacheBytes: config.prefixCacheBytes,
      prefillChunk: config.prefillChunk,
      maxQueue: config.maxQueue,
      rewriteGraph: config.graphRewrite,
    },
    log,
  );
  app = await buildServer({
    registry,
    models: pool,
    keys: config.keys,
    rateLimits: { requestsPerMinute: config.requestsPerMinute, inputTokensPerSecond: config.inputTokensPerSecond },
    deadlineMs: config.deadlineMs,
    bodyLimit: config.bodyLimit,
    logLevel: config.logLevel,
    prefixCacheScope: config.prefixCacheScope,
    serverTimingEngine: config.serverTimingEngine,
  });

  if (config.generatedKey) {
    process.stdout.write(
      `\nNo API key configured (ASSAY_API_KEYS or --keys-file), so one was generated for this run.\n` +
        `It is printed only this once and is not stored anywhere:\n\n    ${config.generatedKey}\n\n` +
        `Send it as: Authorization: Bearer <key>\n\n`,
    );
  }

  const server = app;
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        server.log.warn({ signal }, 'second signal: exiting without waiting');
        return resolve(1);
      }
      stopping = true;
      server.log.info({ signal }, 'shutting down: not accepting new requests, finishing in-flight ones');
      // In-flight work is bounded by the deadline; past it (plus a margin), cut the connections.
      setTimeout(() => server.server.closeAllConnections(), config.deadlineMs + 10_000).unref();
      server
        .close()
        .then(() => pool.close())
        .then(() => {
          server.log.info('shutdown complete');
          resolve(0);
        }, (err) => {
          server.log.error({ err }, 'shutdown failed');
          resolve(1);
        });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });

  try {
    await server.listen({ host: config.host, port: config.port });
  } catch (err) {
    server.log.error({ err }, `cannot listen on ${config.host}:${config.port}`);
    await pool.close();
    return 1;
  }
  // /healthz answers 503 "loading" until the default model is ready.
  const loaded = pool.preload().then(
    () => {
      server.log.info({ model: registry.default }, 'ready');
      return true;
    },
    (err: Error) => {
      server.log.fatal({ err, reason: err.message }, 'the default model failed to load');
      return false;
    },
  );
  // A default model that cannot load leaves nothing to serve: exit 1 (unless already stopping).
  const ok = await Promise.race([loaded, stopped.then(() => true)]);
  if (!ok) {
    await server.close().catch(() => undefined);
    await pool.close();
    return 1;
  }
  return stopped;
}

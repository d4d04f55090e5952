// Every setting of `assay serve`, once: its flag, its environment variable, its type and bounds, its
// default (from src/defaults.ts) and its documentation. `assay serve --help` and the README's
// configuration table are generated from this schema (src/config/docs.ts; a test holds the README
// to it), and src/config/load.ts parses flags and environment with it once, at startup.
import { z } from 'zod';
import { DEFAULTS } from '../defaults.js';
import { DEFAULT_REGISTRY_FILE } from '../registry/index.js';
import type { EngineConfig } from '../engine/index.js';
import type { ServerOptions } from '../api/index.js';
import { normalOrigin, validHostEntry } from '../common/index.js';

export interface SettingMeta {
  /** Long flag without dashes; a boolean setting that defaults to true is turned off by `--no-<flag>`. */
  flag?: string;
  env?: string;
  /** What the flag takes (N, FILE, ...); absent for boolean switches. */
  arg?: string;
  doc: string;
  /** How the default reads in the docs, when its value does not say it (e.g. a path). */
  shownDefault?: string;
  /** The engine setting (EngineConfig field) this one sets, for every model the server loads. */
  engine?: keyof EngineConfig;
  /** The server option (ServerOptions field) this one sets. */
  server?: keyof ServerOptions;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

/** An integer read from text, within bounds; the message names what was wrong. */
function int(min: number, max = Number.MAX_SAFE_INTEGER) {
  return z.union([z.number(), z.string()]).transform((v, ctx) => {
    const n = typeof v === 'number' ? v : /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      ctx.addIssue({
        code: 'custom',
        message: `must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`}, got '${v}'`,
      });
      return z.NEVER;
    }
    return n;
  });
}

/** A switch: a flag's true/false, or an environment variable's 1/true/yes/on or 0/false/no/off. */
function bool() {
  return z.union([z.boolean(), z.string()]).transform((v, ctx) => {
    if (typeof v === 'boolean') return v;
    const s = v.trim().toLowerCase();
    if (TRUE.includes(s)) return true;
    if (FALSE.includes(s)) return false;
    ctx.addIssue({ code: 'custom', message: `must be one of ${[...TRUE, ...FALSE].join(', ')}, got '${v}'` });
    return z.NEVER;
  });
}

function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.string().transform((v, ctx) => {
    if ((values as readonly string[]).includes(v)) return v as T[number];
    ctx.addIssue({
      code: 'custom',
      message: `must be ${values.length === 2 ? `${values[0]} or ${values[1]}` : `one of ${values.join(', ')}`}, got '${v}'`,
    });
    return z.NEVER;
  });
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration as Ollama's keep_alive reads: Go-style (`5m`, `1h30m`, `500ms`) or plain seconds
 * (`300`), in ms; any negative value means never (-1).
 */
export function duration() {
  return z.union([z.number(), z.string()]).transform((v, ctx) => {
    const s = String(v).trim();
    const negative = s.startsWith('-');
    const body = negative ? s.slice(1) : s;
    let ms: number;
    if (/^\d+(\.\d+)?$/.test(body)) ms = Number(body) * 1000;
    else if (/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(body))
      ms = [...body.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)].reduce((t, [, n, u]) => t + Number(n) * UNIT_MS[u!]!, 0);
    else {
      ctx.addIssue({
        code: 'custom',
        message: `must be a duration such as 5m, 30s, 1h30m or seconds (0: at once, negative: never), got '${v}'`,
      });
      return z.NEVER;
    }
    return negative && ms > 0 ? -1 : Math.round(ms);
  });
}

/** A comma-separated list of names (empty entries dropped). */
function names() {
  return z.string().transform((v) =>
    v
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  );
}

function text() {
  return z.string().min(1, 'must not be empty');
}

/** A comma-separated list, each entry trimmed and checked by `valid` (normalised by it when it returns a string). */
function list(what: string, valid: (entry: string) => boolean | string | undefined) {
  return z.string().transform((v, ctx) => {
    const out: string[] = [];
    for (const entry of v
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)) {
      const ok = valid(entry);
      if (ok === false || ok === undefined) {
        ctx.addIssue({ code: 'custom', message: `expected ${what}, got '${entry}'` });
        return z.NEVER;
      }
      out.push(typeof ok === 'string' ? ok : entry);
    }
    return out;
  });
}

const m = (meta: SettingMeta): SettingMeta & Record<string, unknown> => ({ ...meta });

/** Settings in the order the help lists them. Every field is optional in input and has its default. */
export const ServeSettingsSchema = z.strictObject({
  host: text()
    .default(DEFAULTS.host)
    .meta(m({ flag: 'host', env: 'HOST', arg: 'H', doc: 'listen address (0.0.0.0 to expose)' })),
  port: int(0, 65535)
    .default(DEFAULTS.port)
    .meta(m({ flag: 'port', env: 'PORT', arg: 'N', doc: 'listen port (0: any free port)' })),
  allowedHosts: list('host names (name, *.suffix, IP literal, or *)', validHostEntry)
    .optional()
    .meta(
      m({
        flag: 'allowed-hosts',
        env: 'ASSAY_ALLOWED_HOSTS',
        arg: 'NAMES',
        doc:
          'comma-separated Host names the server answers to besides localhost, *.localhost, IP ' +
          "literals and the machine's name (exact, or *.suffix); any other Host gets 403 (DNS " +
          'rebinding guard). Checked on a loopback bind by default, on other binds only when set ' +
          '(behind a proxy: its public names); * turns the check off',
        shownDefault: 'none (checked on a loopback bind)',
      }),
    ),
  corsOrigins: list('origins as scheme://host[:port], or *', (e) => (e === '*' ? e : normalOrigin(e)))
    .optional()
    .meta(
      m({
        server: 'corsOrigins',
        flag: 'cors-origins',
        env: 'ASSAY_CORS_ORIGINS',
        arg: 'ORIGINS',
        doc:
          'comma-separated origins (https://app.example.com) whose pages may call the API from a ' +
          'browser, with CORS headers (Authorization allowed, never credentials); * allows any ' +
          'origin. Off by default: a browser request from any other origin gets 403',
        shownDefault: 'none',
      }),
    ),
  registry: text()
    .default(DEFAULT_REGISTRY_FILE)
    .meta(
      m({
        flag: 'registry',
        env: 'ASSAY_REGISTRY',
        arg: 'FILE',
        doc: 'model registry',
        shownDefault: 'models/registry.json',
      }),
    ),
  keysFile: text()
    .optional()
    .meta(
      m({
        flag: 'keys-file',
        env: 'ASSAY_KEYS_FILE',
        arg: 'FILE',
        doc: 'JSON of SHA-256 key hashes with per-key models and limits',
      }),
    ),
  apiKeys: z
    .string()
    .optional()
    .meta(
      m({
        env: 'ASSAY_API_KEYS',
        doc: 'comma-separated API keys, all models, default limits (environment only); with no key configured, one is generated for the run and printed once',
      }),
    ),
  apiKey: z
    .string()
    .optional()
    .meta(
      m({
        env: 'ASSAY_API_KEY',
        doc:
          "one API key, the variable the CLI and the playground's Copy as curl send (environment " +
          'only): served as one more key of ASSAY_API_KEYS (the operator key when ASSAY_API_KEYS and ' +
          '--keys-file are unset)',
      }),
    ),
  requestsPerMinute: int(1)
    .default(DEFAULTS.requestsPerMinute)
    .meta(m({ flag: 'rpm', env: 'ASSAY_RATE_RPM', arg: 'N', doc: 'requests per minute per key' })),
  inputTokensPerSecond: int(1)
    .default(DEFAULTS.inputTokensPerSecond)
    .meta(m({ flag: 'tps', env: 'ASSAY_RATE_TPS', arg: 'N', doc: 'input tokens per second per key' })),
  threads: int(0)
    .default(DEFAULTS.threads)
    .meta(
      m({
        engine: 'threads',
        flag: 'threads',
        env: 'ASSAY_THREADS',
        arg: 'N',
        doc: 'onnxruntime threads per model (0: one per core)',
      }),
    ),
  prefixCacheBytes: int(0)
    .default(DEFAULTS.prefixCacheBytes)
    .meta(
      m({
        engine: 'prefixCacheBytes',
        flag: 'prefix-cache-bytes',
        env: 'ASSAY_PREFIX_CACHE_BYTES',
        arg: 'N',
        doc: 'cross-request prefix KV cache in bytes (256 MiB; 0: off)',
      }),
    ),
  prefillChunk: int(0)
    .default(DEFAULTS.prefillChunk)
    .meta(
      m({
        engine: 'prefillChunk',
        flag: 'prefill-chunk',
        env: 'ASSAY_PREFILL_CHUNK',
        arg: 'N',
        doc: 'prefill long prompts in chunks of N tokens (0: one pass)',
      }),
    ),
  maxQueue: int(0)
    .default(DEFAULTS.maxQueue)
    .meta(
      m({
        engine: 'maxQueue',
        flag: 'max-queue',
        env: 'ASSAY_MAX_QUEUE',
        arg: 'N',
        doc: 'requests waiting per model before 529',
      }),
    ),
  deadlineMs: int(1)
    .default(DEFAULTS.deadlineMs)
    .meta(
      m({
        server: 'deadlineMs',
        flag: 'deadline-ms',
        env: 'ASSAY_DEADLINE_MS',
        arg: 'N',
        doc: 'per-request deadline (model load wait, queue, evaluation) before 408',
      }),
    ),
  requestTimeoutMs: int(1)
    .default(DEFAULTS.requestTimeoutMs)
    .meta(
      m({
        server: 'requestTimeoutMs',
        flag: 'request-timeout-ms',
        env: 'ASSAY_REQUEST_TIMEOUT_MS',
        arg: 'N',
        doc: 'time a client gets to send its whole request (slowloris guard)',
      }),
    ),
  bodyLimit: int(1)
    .default(DEFAULTS.bodyLimit)
    .meta(
      m({
        server: 'bodyLimit',
        flag: 'body-limit',
        env: 'ASSAY_BODY_LIMIT',
        arg: 'N',
        doc: 'largest request body in bytes before 413',
      }),
    ),
  bigBodySlots: int(1, 1024)
    .default(DEFAULTS.bigBodySlots)
    .meta(
      m({
        server: 'bigBodySlots',
        flag: 'big-body-slots',
        env: 'ASSAY_BIG_BODY_SLOTS',
        arg: 'N',
        doc:
          'request bodies over 64 KiB received at once, each streamed to the body worker as it ' +
          'arrives; the others wait unread (TCP holds their clients back), so raw bodies in memory ' +
          'stay within about N × --body-limit',
      }),
    ),
  maxLoadedModels: int(1)
    .default(DEFAULTS.maxLoadedModels)
    .meta(
      m({
        flag: 'max-loaded-models',
        env: 'ASSAY_MAX_LOADED_MODELS',
        arg: 'N',
        doc: 'most models resident at once; loading another first unloads the least recently used idle one (docs/operations.md#model-residency)',
      }),
    ),
  keepAlive: duration()
    .prefault(DEFAULTS.keepAlive)
    .meta(
      m({
        shownDefault: DEFAULTS.keepAlive,
        flag: 'keep-alive',
        env: 'ASSAY_KEEP_ALIVE',
        arg: 'D',
        doc:
          'how long a model stays resident after its last request (5m, 30s, 1h or seconds; 0: unload ' +
          'after each request; negative, as --keep-alive=-1: never); the default and --preload ' +
          'models stay',
      }),
    ),
  memoryBudget: int(1)
    .optional()
    .meta(
      m({
        flag: 'memory-budget',
        env: 'ASSAY_MEMORY_BUDGET',
        arg: 'BYTES',
        doc:
          "bytes the resident models may take, each measured as the process's RSS growth over its " +
          'load and its passes, plus what its prefix cache holds; a model that alone, with a full ' +
          'prefix cache, passes it is refused',
        shownDefault: `${DEFAULTS.memoryBudgetShare * 100}% of the machine's memory (its cgroup limit when lower)`,
      }),
    ),
  preload: names()
    .optional()
    .meta(
      m({
        flag: 'preload',
        env: 'ASSAY_PRELOAD',
        arg: 'NAMES',
        doc: 'comma-separated models to load at startup besides the default; like the default, they stay resident',
      }),
    ),
  provider: oneOf(['cpu', 'cuda'])
    .default(DEFAULTS.provider)
    .meta(
      m({
        engine: 'provider',
        flag: 'provider',
        env: 'ASSAY_PROVIDER',
        arg: 'cpu|cuda',
        doc: 'onnxruntime execution provider',
      }),
    ),
  prefixCacheScope: oneOf(['key', 'shared'])
    .default(DEFAULTS.prefixCacheScope)
    .meta(
      m({
        server: 'prefixCacheScope',
        flag: 'prefix-cache-scope',
        env: 'ASSAY_PREFIX_CACHE_SCOPE',
        arg: 'key|shared',
        doc:
          'key: each API key reuses only its own cached prefixes; shared: one prefix cache across ' +
          'keys (a key can then time whether another key sent a state recently)',
      }),
    ),
  serverTimingEngine: bool()
    .default(DEFAULTS.serverTimingEngine)
    .meta(
      m({
        server: 'serverTimingEngine',
        flag: 'server-timing-engine',
        env: 'ASSAY_SERVER_TIMING_ENGINE',
        doc: 'add engine;dur= (queue + passes) to Server-Timing; off by default because it tells a prefix-cache hit from a miss',
      }),
    ),
  docs: bool()
    .default(DEFAULTS.docs)
    .meta(
      m({
        server: 'docs',
        flag: 'docs',
        env: 'ASSAY_DOCS',
        doc: 'serve /docs, the interactive API reference (Swagger UI on /openapi.json, assets from the package); --no-docs turns it off',
      }),
    ),
  playground: bool()
    .default(DEFAULTS.playground)
    .meta(
      m({
        server: 'playground',
        flag: 'playground',
        env: 'ASSAY_PLAYGROUND',
        doc:
          'serve /playground, a page to send a request and see its answers as charts (static files; ' +
          'the key stays in the browser tab); --no-playground turns it off',
      }),
    ),
  mcp: bool()
    .default(DEFAULTS.mcp)
    .meta(
      m({
        server: 'mcp',
        flag: 'mcp',
        env: 'ASSAY_MCP',
        doc: 'serve /mcp, the MCP endpoint for agents (Streamable HTTP, the same keys and limits as /v1/systemone; docs/agents.md); --no-mcp turns it off',
      }),
    ),
  replicaId: text()
    .optional()
    .meta(
      m({
        server: 'replicaId',
        flag: 'replica-id',
        env: 'ASSAY_REPLICA_ID',
        arg: 'NAME',
        doc:
          "name this replica in an x-assay-replica response header, for checking a proxy's routing " +
          '(off by default: it tells a caller which replica holds its states)',
      }),
    ),
  packQuestions: bool()
    .default(DEFAULTS.packQuestions)
    .meta(
      m({
        engine: 'packQuestions',
        flag: 'pack-questions',
        env: 'ASSAY_PACK_QUESTIONS',
        doc:
          "packed evaluation: a request's questions in one pass on its prefix (--no-pack-questions: " +
          "one pass per question, which keeps each question's quantized activations to itself)",
      }),
    ),
  packTokens: int(1)
    .default(DEFAULTS.packTokens)
    .meta(
      m({
        engine: 'packTokens',
        flag: 'pack-tokens',
        env: 'ASSAY_PACK_TOKENS',
        arg: 'N',
        doc: "most question tokens in one packed pass; a request's questions past it take more passes",
      }),
    ),
  batchPackTokens: int(1)
    .default(DEFAULTS.batchPackTokens)
    .meta(
      m({
        engine: 'batchPackTokens',
        flag: 'batch-pack-tokens',
        env: 'ASSAY_BATCH_PACK_TOKENS',
        arg: 'N',
        doc:
          'most question tokens in one packed pass of a batch job (at most --pack-tokens), and the ' +
          'base of its prefill pieces (at most --prefill-chunk): an interactive request waits behind ' +
          'at most one batch pass, and this keeps that pass short',
      }),
    ),
  batchTokens: int(0)
    .optional()
    .meta(
      m({
        engine: 'batchTokens',
        flag: 'batch-tokens',
        env: 'ASSAY_BATCH_TOKENS',
        arg: 'N',
        doc:
          'most tokens of one pass shared by concurrent requests whose whole prompt fits one packed ' +
          'pass, each seeing only its own tokens (0: off; off on CPU, where the masked attention ' +
          'makes a shared pass cost more than its parts; never on exports that still quantize ' +
          'activations with one scale per pass, such as dynamic int8 run with --no-per-token-int8, ' +
          'where it would let the tokens of one caller move the answers of another; nor on per-token ' +
          'int8 with fused attention, whose state and question tokens run in passes of their own ' +
          'kinds (docs/engine.md, Exactness across passes))',
        shownDefault: `${DEFAULTS.batchTokens.cpu} on cpu, ${DEFAULTS.batchTokens.cuda} on cuda`,
      }),
    ),
  exactInt8: bool()
    .default(DEFAULTS.exactInt8)
    .meta(
      m({
        engine: 'exactInt8',
        flag: 'exact-int8',
        env: 'ASSAY_EXACT_INT8',
        doc:
          'exact int8 on CPUs whose fast int8 kernel saturates (AVX2, AVX-512 without VNNI: ' +
          "onnxruntime's U8U8 kernel, about 17% slower there); --no-exact-int8 keeps the fast " +
          'kernel, and int8 answers then drift from fp32. VNNI/AMX CPUs are exact either way',
      }),
    ),
  q4Kernels: oneOf(['int8', 'native'])
    .default(DEFAULTS.q4Kernels)
    .meta(
      m({
        engine: 'q4Kernels',
        flag: 'q4-kernels',
        env: 'ASSAY_Q4_KERNELS',
        arg: 'int8|native',
        doc:
          'how 4-bit exports (MatMulNBits) run on CPU: int8 converts their weights at load to int8 ' +
          'and runs the int8 kernels (several times faster at prefill; the matrix weights take about ' +
          "1.6x the memory, +185 MB for a 0.5B model); native keeps onnxruntime's 4-bit kernel, for " +
          'memory-bound hosts',
      }),
    ),
  perTokenInt8: bool()
    .default(DEFAULTS.perTokenInt8)
    .meta(
      m({
        engine: 'perTokenInt8',
        flag: 'per-token-int8',
        env: 'ASSAY_PER_TOKEN_INT8',
        doc:
          "dynamic int8 exports quantize each token's activations with its own scale (rewritten at " +
          'load), and their attention sums in float64, so an answer does not move with the other ' +
          'questions, requests or cached prefix of its pass; --no-per-token-int8 runs them as ' +
          'exported (one activation scale per pass)',
      }),
    ),
  confidence: oneOf(['entropy', 'hosted'])
    .default(DEFAULTS.confidence)
    .meta(
      m({
        engine: 'confidence',
        server: 'confidence',
        flag: 'confidence',
        env: 'ASSAY_CONFIDENCE',
        arg: 'entropy|hosted',
        doc:
          'the confidence of choice and score answers: entropy (1 − H/ln N over every outcome) or ' +
          "hosted (the hosted service's formulas: choice (p_max − 1/k)/(1 − 1/k), score 1 − expected " +
          "distance from the most probable level over the uniform's); docs/api.md has a worked " +
          'example',
      }),
    ),
  graphRewrite: bool()
    .default(DEFAULTS.rewriteGraph)
    .meta(
      m({
        engine: 'rewriteGraph',
        flag: 'graph-rewrite',
        env: 'ASSAY_GRAPH_REWRITE',
        doc: 'the load-time graph rewrite (--no-graph-rewrite runs every export as is; per model: "graph_rewrite": false in the registry)',
      }),
    ),
  fusedAttention: bool()
    .default(DEFAULTS.fusedAttention)
    .meta(
      m({
        engine: 'fusedAttention',
        flag: 'fused-attention',
        env: 'ASSAY_FUSED_ATTENTION',
        doc:
          "rewrite attention written in plain ops into onnxruntime's fused GroupQueryAttention at " +
          'load (flash attention on CPU: no [S, T] score or mask tensor; passes with their own masks ' +
          'keep them); --no-fused-attention or ASSAY_FUSED_ATTENTION=off runs attention as exported; ' +
          'per model: "fused_attention": false in the registry',
      }),
    ),
  graphCacheDir: text()
    .optional()
    .meta(
      m({
        engine: 'graphCacheDir',
        flag: 'graph-cache-dir',
        env: 'ASSAY_GRAPH_CACHE_DIR',
        arg: 'DIR',
        doc:
          'where load-time graph rewrites are written (model folders are only read; an export with ' +
          'external weights adds only its small graph here, a single-file one a copy of its weights)',
        shownDefault: '$XDG_CACHE_HOME/assay/graphs or ~/.cache/assay/graphs, else <tmpdir>/assay-graphs',
      }),
    ),
  dataDir: text()
    .optional()
    .meta(
      m({
        flag: 'data-dir',
        env: 'ASSAY_DATA_DIR',
        arg: 'DIR',
        doc:
          'where batch jobs keep their inputs and results until they are read or expire (an SQLite ' +
          'file and the uploads being read in; docs/batches.md). A directory that cannot be written ' +
          'turns batches off (503) and says why at startup',
        shownDefault: '$XDG_DATA_HOME/assay or ~/.local/share/assay',
      }),
    ),
  batches: bool()
    .default(DEFAULTS.batches)
    .meta(
      m({ flag: 'batches', env: 'ASSAY_BATCHES', doc: 'serve batch jobs (/v1/batches); --no-batches turns them off' }),
    ),
  batchQueueUrl: text()
    .optional()
    .meta(
      m({
        flag: 'batch-queue-url',
        env: 'ASSAY_BATCH_QUEUE_URL',
        arg: 'URL',
        doc:
          'a postgres:// URL: replicas share their batches, lines and results in this PostgreSQL ' +
          'database (queued with pg-boss), so any replica accepts a batch and serves its results, ' +
          'and a replica that dies loses no line. Unset: the embedded store in --data-dir, one server',
        shownDefault: 'none (embedded store)',
      }),
    ),
  batchMaxLines: int(1)
    .default(DEFAULTS.batchMaxLines)
    .meta(m({ flag: 'batch-max-lines', env: 'ASSAY_BATCH_MAX_LINES', arg: 'N', doc: 'most lines in one batch input' })),
  batchMaxBytes: int(1)
    .default(DEFAULTS.batchMaxBytes)
    .meta(
      m({
        flag: 'batch-max-bytes',
        env: 'ASSAY_BATCH_MAX_BYTES',
        arg: 'BYTES',
        doc: 'largest batch input (413 above)',
      }),
    ),
  batchWindow: duration()
    .prefault(DEFAULTS.batchWindow)
    .meta(
      m({
        shownDefault: DEFAULTS.batchWindow,
        flag: 'batch-window',
        env: 'ASSAY_BATCH_WINDOW',
        arg: 'DURATION',
        doc: "how long a batch has to finish: past it, it is expired and its unanswered lines get a batch_expired error (OpenAI's completion window)",
      }),
    ),
  batchRetention: duration()
    .prefault(DEFAULTS.batchRetention)
    .meta(
      m({
        shownDefault: DEFAULTS.batchRetention,
        flag: 'batch-retention',
        env: 'ASSAY_BATCH_RETENTION',
        arg: 'DURATION',
        doc: 'how long an ended batch keeps its results when they are never read to the last page; then the batch, its input and results are deleted',
      }),
    ),
  batchReadRetention: duration()
    .prefault(DEFAULTS.batchReadRetention)
    .meta(
      m({
        shownDefault: DEFAULTS.batchReadRetention,
        flag: 'batch-read-retention',
        env: 'ASSAY_BATCH_READ_RETENTION',
        arg: 'DURATION',
        doc:
          'how long results stay once their last page was read (a client that crashed while reading ' +
          'reads again); the input is deleted when the last page is read',
      }),
    ),
  batchLease: duration()
    .prefault(DEFAULTS.batchLease)
    .meta(
      m({
        shownDefault: DEFAULTS.batchLease,
        flag: 'batch-lease',
        env: 'ASSAY_BATCH_LEASE',
        arg: 'DURATION',
        doc:
          'how long a replica holds the batch lines it claimed: a replica that dies mid-claim delays ' +
          'those lines by at most this, then another takes them up (claims are sized to a quarter of ' +
          'it at the recent pace)',
      }),
    ),
  logLevel: oneOf(LOG_LEVELS)
    .default(DEFAULTS.logLevel)
    .meta(
      m({
        server: 'logLevel',
        flag: 'log-level',
        env: 'ASSAY_LOG_LEVEL',
        arg: 'L',
        doc: `log level: ${LOG_LEVELS.join('|')}`,
      }),
    ),
  logFormat: oneOf(['json', 'pretty'])
    .optional()
    .meta(
      m({
        flag: 'log-format',
        env: 'ASSAY_LOG_FORMAT',
        arg: 'json|pretty',
        doc: 'pretty: colourised lines for a person; json: one JSON object per line for a collector',
        shownDefault: 'pretty on a terminal, else json',
      }),
    ),
});

export type ServeSettings = z.output<typeof ServeSettingsSchema>;
export type SettingName = keyof ServeSettings;

export interface SettingInfo extends SettingMeta {
  name: SettingName;
  /** The default as the docs show it; undefined when there is none. */
  shown?: string;
  boolean: boolean;
}

/** Each setting with its metadata and default, in schema order. */
export function settingsInfo(): SettingInfo[] {
  return Object.entries(ServeSettingsSchema.shape).map(([name, schema]) => {
    const meta = schema.meta() as unknown as SettingMeta;
    const def = schema.def.type === 'default' ? (schema.def as { defaultValue: unknown }).defaultValue : undefined;
    return {
      ...meta,
      name: name as SettingName,
      shown: meta.shownDefault ?? (def === undefined ? undefined : String(def)),
      boolean: meta.arg === undefined && meta.flag !== undefined,
    };
  });
}

/** The settings that set an engine or server option (their `engine` / `server` meta), as those options. */
export function settingsFor(kind: 'engine', s: ServeSettings): Partial<EngineConfig>;
export function settingsFor(kind: 'server', s: ServeSettings): Partial<ServerOptions>;
export function settingsFor(kind: 'engine' | 'server', s: ServeSettings): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const info of settingsInfo()) {
    const target = info[kind];
    if (target !== undefined && s[info.name] !== undefined) out[target] = s[info.name];
  }
  return out;
}

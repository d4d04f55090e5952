// Shared setup of the HTTP tests: the real engine on the tiny synthetic model, a registry
// pointing at it, and a server built in-process.
import { Writable } from 'node:stream';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { keysFromList, sha256, type ApiKey } from '../../src/api/auth.js';
import { staticModels, type ModelProvider } from '../../src/service/provider.js';
import { buildServer, type AssayServer, type ServerOptions } from '../../src/api/server.js';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../../src/engine/index.js';
import { checkRegistry, type Registry } from '../../src/registry/registry.js';

export const KEY = 'test-key-1';
export const OTHER_KEY = 'test-key-2';
export const MODEL_ID = 'svc-1.13.0';

/** svc-latest / svc-preview → svc-1.13.0, plus svc-0.9.0 (another versioned id, for 403s), plus `aliases`. */
export function testRegistry(dir: string, aliases: Record<string, string> = {}): Registry {
  return checkRegistry(
    {
      default: MODEL_ID,
      models: {
        [MODEL_ID]: { path: dir, description: 'tiny synthetic', release_date: '2026-11-22' },
        'svc-0.9.0': { path: dir, description: 'older tiny synthetic', release_date: '2026-01-01' },
      },
      aliases: { 'svc-latest': MODEL_ID, 'svc-preview': MODEL_ID, ...aliases },
    },
    '/tmp/assay-test-registry.json',
  );
}

export async function tinyEvaluator(engine: Partial<EngineConfig> = {}): Promise<Evaluator> {
  const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  return loadEvaluator({ modelDir: dir, variant: 'fp32', threads: 1, ...engine });
}

export interface TestServer {
  app: AssayServer;
  evaluator: Evaluator;
  logs: string[];
  close(): Promise<void>;
}

/** Keys: KEY may use everything; OTHER_KEY only svc-latest. */
export function testKeys(): ApiKey[] {
  return [...keysFromList(KEY), { name: 'restricted', hash: sha256(OTHER_KEY), models: ['svc-latest'] }];
}

export async function startServer(
  opts: Partial<ServerOptions> & {
    engine?: Partial<EngineConfig>;
    /** Reuse a loaded evaluator (the caller closes it). */
    evaluator?: Evaluator;
    /** Fault injection around the real evaluator. */
    wrap?: (e: Evaluator) => Evaluator;
  } = {},
): Promise<TestServer> {
  const owned = !opts.evaluator;
  const evaluator = opts.evaluator ?? (await tinyEvaluator(opts.engine));
  const used = opts.wrap ? opts.wrap(evaluator) : evaluator;
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const models: ModelProvider = staticModels({ [MODEL_ID]: used, 'svc-0.9.0': used });
  const app = await buildServer({
    registry: testRegistry(evaluator.modelDir),
    models,
    keys: testKeys(),
    logLevel: 'trace',
    logStream: stream,
    ...opts,
  });
  return {
    app,
    evaluator,
    logs,
    async close() {
      await app.close();
      if (owned) await evaluator.close();
    },
  };
}

/** startServer, listening on a free loopback port (real sockets, as clients use it); `base` is its URL. */
export async function startListening(
  opts: Parameters<typeof startServer>[0] = {},
): Promise<TestServer & { base: string }> {
  const s = await startServer(opts);
  return { ...s, base: await s.app.listen({ host: '127.0.0.1', port: 0 }) };
}

/** The real evaluator with its evaluate() replaced (fault injection); `real` is the original. */
export function withEvaluate(
  e: Evaluator,
  evaluate: (
    req: Parameters<Evaluator['evaluate']>[0],
    o: Parameters<Evaluator['evaluate']>[1],
    real: Evaluator,
  ) => ReturnType<Evaluator['evaluate']>,
): Evaluator {
  return {
    modelDir: e.modelDir,
    synthetic: e.synthetic,
    stats: () => e.stats(),
    close: () => e.close(),
    evaluate: (req, o) => evaluate(req, o, e),
  };
}

export const auth = (key = KEY) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** A request with one question of each type. */
export function mixedRequest(state: unknown = 'The invoice was paid on time by the customer.') {
  return {
    state,
    model: 'svc-latest',
    questions: {
      paid: { type: 'noul', instructions: 'Was the invoice paid?', criteria: { true: 'paid', false: 'unpaid' } },
      channel: {
        type: 'choice',
        instructions: 'How was it paid?',
        criteria: { card: 'a credit or debit card', transfer: 'a bank transfer', cash: null },
      },
      punctuality: { type: 'score', instructions: 'How punctual?', criteria: ['late', 'on the day', 'early'] },
    },
  };
}

/** pydantic detail of a 422 body. */
export interface Detail {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

// Loads evaluators for the registry's versioned ids on first use and keeps them.
// A synthetic entry whose folder is missing is generated first; serving a synthetic
// (random-weight) model is always announced with a loud warning.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../engine/index.js';
import { resolveModel, type Registry } from '../registry.js';
import type { EngineSnapshot } from './metrics.js';

/** What the server needs from the models: an evaluator per versioned id. */
export interface ModelProvider {
  /** The evaluator of a versioned id (loading it on first use). */
  get(id: string): Promise<Evaluator>;
  /** Loaded evaluators, for /metrics. */
  loaded(): EngineSnapshot[];
  /** Whether the default model is loaded (GET /healthz). */
  ready(): boolean;
  close(): Promise<void>;
}

/** A provider over evaluators that are already loaded (tests, embedding). */
export function staticModels(evaluators: Record<string, Evaluator>): ModelProvider {
  return {
    async get(id) {
      const e = evaluators[id];
      if (!e) throw new Error(`no evaluator loaded for model ${id}`);
      return e;
    },
    loaded: () => Object.entries(evaluators).map(([model, e]) => ({ model, stats: e.stats() })),
    ready: () => true,
    close: async () => {
      await Promise.all(Object.values(evaluators).map((e) => e.close()));
    },
  };
}

export interface PoolLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export const SYNTHETIC_WARNING =
  'SERVING A SYNTHETIC RANDOM-WEIGHT MODEL: its answers are MEANINGLESS until a real model is configured ' +
  '(npm run models:fetch, or point models/registry.json at an exported model folder; see README)';

/**
 * Evaluators for a registry. `engine` holds the options every model shares (threads, queue,
 * prefix cache, provider); folder and variant come from each registry entry.
 */
export function createModelPool(
  registry: Registry,
  engine: Omit<EngineConfig, 'modelDir' | 'variant'>,
  log: PoolLog,
): ModelProvider & { preload(): Promise<Evaluator> } {
  const loading = new Map<string, Promise<Evaluator>>();
  const ready = new Map<string, Evaluator>();
  const defaultId = resolveModel(registry, registry.default)?.id ?? registry.default;

  async function load(id: string): Promise<Evaluator> {
    const m = resolveModel(registry, id);
    if (!m) throw new Error(`model ${id} is not in the registry`);
    if (m.entry.synthetic && !existsSync(join(m.dir, 'assay.json'))) {
      log.warn({ model: id, dir: m.dir }, 'model folder missing: generating the synthetic model declared in the registry');
      const { ensureSynthModel } = await import('../../models/ensure.js');
      await ensureSynthModel({ ...(m.entry.synthetic as Parameters<typeof ensureSynthModel>[0]), out: m.dir });
    }
    const started = performance.now();
    const evaluator = await loadEvaluator({
      ...engine,
      modelDir: m.dir,
      variant: m.entry.variant,
      rewriteGraph: engine.rewriteGraph !== false && m.entry.graph_rewrite !== false,
      onWarning: (message) => log.warn({ model: id, reason: message }, 'model load fell back'),
    });
    log.info({ model: id, dir: m.dir, ms: Math.round(performance.now() - started) }, 'model loaded');
    if (m.entry.synthetic || evaluator.synthetic) {
      for (let i = 0; i < 3; i++) log.warn({ model: id }, SYNTHETIC_WARNING);
    }
    ready.set(id, evaluator);
    return evaluator;
  }

  const get = (id: string): Promise<Evaluator> => {
    let p = loading.get(id);
    if (!p) {
      p = load(id);
      loading.set(id, p);
      p.catch(() => loading.delete(id)); // a failed load is retried by the next request
    }
    return p;
  };

  return {
    get,
    preload: () => get(defaultId),
    loaded: () => [...ready].map(([model, e]) => ({ model, stats: e.stats() })),
    ready: () => ready.has(defaultId),
    async close() {
      await Promise.allSettled([...ready.values()].map((e) => e.close()));
      ready.clear();
      loading.clear();
    },
  };
}

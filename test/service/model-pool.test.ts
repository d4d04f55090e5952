// The model pool loads registry entries on first use and says loudly when a model is synthetic,
// whether the registry declares it or only the folder's own assay.json does.
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool, SYNTHETIC_WARNING } from '../../src/service/model-pool.js';
import { checkRegistry } from '../../src/registry/registry.js';

describe('model pool', () => {
  it('warns that a synthetic folder is meaningless even when the registry entry does not say so', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const registry = checkRegistry(
      {
        default: 'svc-x',
        models: { 'svc-x': { path: dir, variant: 'fp32', description: 'plain entry', release_date: '2026-11-22' } },
        aliases: {},
      },
      '/tmp/assay-pool-registry.json',
    );
    const warnings: string[] = [];
    const pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: (_o, m) => void warnings.push(m) });
    try {
      const evaluator = await pool.preload();
      expect(evaluator.synthetic).toBe(true);
      expect(pool.ready()).toBe(true);
      expect(warnings).toContain(SYNTHETIC_WARNING);
    } finally {
      await pool.close();
    }
  });

  it('announces a synthetic folder once, however many versioned ids and aliases name it', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const entry = { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
    const registry = checkRegistry(
      {
        default: 'svc-a',
        models: { 'svc-a': entry, 'svc-b': entry },
        aliases: { 'svc-latest': 'svc-a', 'svc-preview': 'svc-b' },
      },
      '/tmp/assay-pool-registry.json',
    );
    const warnings: string[] = [];
    const pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: (_o, m) => void warnings.push(m) });
    try {
      await pool.load('svc-a');
      await pool.load('svc-b');
      expect(warnings.filter((w) => w === SYNTHETIC_WARNING)).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  it('a request for a model that is not loaded yet waits for its load (no 503 "loading")', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const entry = { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
    const registry = checkRegistry(
      { default: 'svc-a', models: { 'svc-a': entry, 'svc-b': entry }, aliases: {} },
      '/tmp/assay-pool-registry.json',
    );
    const pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} });
    try {
      // Two requests at once while nothing is loaded: both wait for the one load and get its evaluator.
      const [a, b] = await Promise.all([pool.load('svc-b'), pool.load('svc-b')]);
      expect(a).toBe(b);
      expect(pool.loaded().map((m) => m.model)).toEqual(['svc-b']);
    } finally {
      await pool.close();
    }
  });
});

describe('model pool load notes', () => {
  it('packing unavailable on an export is an info line ("model runs without packing"), not a "fell back" warning', async () => {
    // A dynamic int8 export run as exported (--no-per-token-int8) with --batch-tokens: its one
    // activation scale per pass keeps packing across requests off. That is how the export runs, not a fallback.
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
    const registry = checkRegistry(
      {
        default: 'svc-q',
        models: { 'svc-q': { path: dir, variant: 'int8', description: 'tiny int8', release_date: '2026-11-22' } },
        aliases: {},
      },
      '/tmp/assay-pool-registry.json',
    );
    const lines: Array<[string, string]> = [];
    const pool = createModelPool(
      registry,
      { threads: 1, perTokenInt8: false, batchTokens: 256 },
      { info: (_o, m) => void lines.push(['info', m]), warn: (_o, m) => void lines.push(['warn', m]) },
    );
    try {
      await pool.preload();
      expect(lines).toContainEqual(['info', 'model runs without packing']);
      expect(lines.filter(([level, m]) => level === 'warn' && m !== SYNTHETIC_WARNING)).toEqual([]);
    } finally {
      await pool.close();
    }
  });
});

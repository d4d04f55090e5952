// The local engine of `assay eval` (one request or a dataset): a model pool over the registry with
// the resolved model loaded, a synthetic model the registry declares generated on first use (the
// generator is imported only then: a production image leaves it out), warnings said once, an
// escalating entry's notice only when that entry is the one run.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineConfig } from '../engine/index.js';
import { resolveModel, type Registry, type ResolvedModel } from '../registry/index.js';
import { createModelPool, escalationModels } from '../service/index.js';
import type { Io } from './common.js';

/** What a local command says of a synthetic (random-weight) model it answers with. */
export const syntheticNote = (model: string) =>
  `${model} is a synthetic model with random weights: its answers are meaningless ` +
  '(a real model: assay models fetch <owner/name>, docs/models.md#using-a-real-model)';

export type LocalModels = ReturnType<typeof createModelPool>;

/**
 * The pool with `resolved` loaded (`engine`: options beyond the registry's, e.g. a prompt version);
 * the caller closes it. Warnings are prefixed with the command that runs it (`assay eval:`).
 */
export async function openLocalModel(
  registry: Registry,
  resolved: ResolvedModel,
  io: Io,
  engine: Omit<EngineConfig, 'modelDir' | 'variant'> = {},
  command = 'eval',
): Promise<LocalModels> {
  const warned = new Set<string>();
  const pool = createModelPool(registry, engine, {
    info: () => {},
    warn: (o, msg) => {
      // The pool announces every escalating entry of the registry; the command says only what
      // concerns the model it runs (each of the pools one run may open would repeat it).
      const about = (o as { model?: string }).model;
      if (about !== undefined && about !== resolved.id && registry.models[about]?.escalate) return;
      // Nothing is served here: the command says what it answers with, not the server's warning.
      if ((o as { synthetic?: boolean }).synthetic) msg = syntheticNote(about ?? resolved.id);
      if (!warned.has(msg)) io.err(`assay ${command}: ${msg}\n`);
      warned.add(msg);
    },
  });
  try {
    // An escalating entry runs its registered models (escalation.ts): those are the ones to load.
    const ids = resolved.entry.escalate ? escalationModels(registry, resolved.entry.escalate) : [resolved.id];
    for (const id of ids) {
      const m = resolveModel(registry, id)!;
      if (m.entry.synthetic && !existsSync(join(m.dir, 'assay.json'))) {
        const { ensureSyntheticModels } = await import('./models-synth.js');
        await ensureSyntheticModels(registry, (line) => io.err(`assay ${command}: ${line}\n`), id);
      }
      await pool.load(id);
    }
    return pool;
  } catch (e) {
    await pool.close();
    throw e;
  }
}

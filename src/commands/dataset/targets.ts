// What a dataset runs on: an arm of `assay eval --dataset [--compare A,B]` or `assay calibrate`.
//
// An arm is parts joined by "+", each one of:
//   a registry model name or alias          svc-latest
//   a variant of the model (its ONNX file)  fp32, int8, q4, ... (a synthetic model: that dtype's folder)
//   a prompt version (label strategy)       v1 (option names), letters (A, B, C…)
//   option rotations                        rot4 (each choice question over 4 rotations, averaged)
//   a model family (the prompt contract)    one of the engine's FAMILY_NAMES (the default one: Assay's
//                                           generic prompt): the registry entry's `family` for this run
// e.g. `--compare int8,fp32`, `--compare v1,letters`, `--compare int8,int8+rot4`, a prompt
// contract's family against the default one. The local engine runs every kind of arm; a server
// (--url) only model names.
import { basename, dirname, join, relative } from 'node:path';
import { AssayClient } from '../../client/index.js';
import { DEFAULTS } from '../../defaults.js';
import type { EngineConfig } from '../../engine/index.js';
import { FAMILY_NAMES, PROMPT_VERSIONS, parseVariant, VARIANTS } from '../../engine/index.js';
import type { SystemOneRequest } from '../../protocol/index.js';
import { ParsedBody } from '../../protocol/index.js';
import { resolveModel, type ModelEntry, type Registry } from '../../registry/index.js';
import { evaluateRequest } from '../../service/index.js';
import { openLocalModel } from '../local-model.js';
import { batchTarget } from './batch-target.js';
import type { Target, TargetContext } from './target.js';

export type { Target, TargetContext } from './target.js';

export interface ArmSpec {
  /** As the user wrote it (report column). */
  label: string;
  model?: string;
  variant?: string;
  promptVersion?: string;
  rotations?: number;
  /** The family the model runs as (the registry entry's `family` overridden for this arm). */
  family?: ModelEntry['family'];
}

export class ArmError extends Error {}

/** Parses one arm against the registry's names; throws ArmError naming what is not understood. */
export function parseArm(text: string, registry: Registry | undefined): ArmSpec {
  const spec: ArmSpec = { label: text };
  for (const part of text.split('+')) {
    const rot = /^rot(\d+)$/.exec(part);
    if (registry && resolveModel(registry, part)) spec.model = part;
    else if (rot) spec.rotations = Number(rot[1]);
    else if (PROMPT_VERSIONS.includes(part)) spec.promptVersion = part;
    else if ((FAMILY_NAMES as readonly string[]).includes(part)) spec.family = part as ModelEntry['family'];
    else if (parseVariant(part)) spec.variant = parseVariant(part);
    else if (!registry)
      spec.model = part; // a server's model name
    else {
      throw new ArmError(
        `"${part}" (in "${text}") is not a model of the registry, a variant ` +
          `(${VARIANTS.join(', ')}), a prompt version (${PROMPT_VERSIONS.join(', ')}), a family ` +
          `(${FAMILY_NAMES.join(', ')}) or rotN`,
      );
    }
  }
  if (spec.rotations !== undefined && spec.rotations < 1) throw new ArmError(`"${text}": rotN needs N ≥ 1`);
  return spec;
}

/** Opens an arm: loads its model on the local engine, or a client of the server. */
export async function openTarget(spec: ArmSpec, ctx: TargetContext): Promise<Target> {
  if (ctx.url !== undefined) {
    if (spec.variant || spec.promptVersion || spec.rotations || spec.family) {
      throw new ArmError(`"${spec.label}": a server (--url) runs its models as configured: compare model names only`);
    }
    if (ctx.batch) return batchTarget(spec.label, spec.model ?? ctx.model, ctx);
    const client = new AssayClient({
      baseUrl: ctx.url,
      env: ctx.io.env,
      timeoutMs: ctx.timeoutMs,
      maxRetries: ctx.retries,
    });
    const model = spec.model ?? ctx.model;
    const target: Target = {
      label: spec.label,
      model: model ?? client.model,
      synthetic: false,
      async evaluate(line) {
        const response = await client.evaluate(
          { state: line.state, questions: line.questions, ...(model ? { model } : {}) } as SystemOneRequest,
          { order: line.order },
        );
        target.model = response.model;
        return response;
      },
      close: async () => {},
    };
    return target;
  }
  let registry = ctx.registry!;
  const name = spec.model ?? ctx.model ?? registry.default;
  const resolved = resolveModel(registry, name);
  if (!resolved) throw new ArmError(`model "${name}" is not in the registry ${registry.file}`);
  if (spec.variant) registry = await withVariant(registry, resolved.id, resolved.entry, spec.variant);
  if (spec.family) {
    const entry = registry.models[resolved.id]!;
    if (entry.escalate)
      throw new ArmError(`"${spec.label}": ${resolved.id} escalates between models: it has no family`);
    registry = { ...registry, models: { ...registry.models, [resolved.id]: { ...entry, family: spec.family } } };
  }
  const engine: Omit<EngineConfig, 'modelDir' | 'variant'> = {
    ...(spec.promptVersion ? { promptVersion: spec.promptVersion } : {}),
    ...(spec.rotations ? { optionRotations: spec.rotations } : {}),
  };
  const arm = resolveModel(registry, resolved.id)!;
  const pool = await openLocalModel(registry, arm, ctx.io, engine, ctx.command);
  // An escalating entry: its first model tells whether it is synthetic.
  const evaluator = await pool.load(arm.entry.escalate ? resolveModel(registry, arm.entry.escalate.first)!.id : arm.id);
  return {
    label: spec.label,
    model: arm.id,
    synthetic: evaluator.synthetic === true,
    dir: arm.dir,
    confidence: engine.confidence ?? DEFAULTS.confidence,
    async evaluate(line) {
      const { response } = await evaluateRequest(
        { registry, models: pool },
        new ParsedBody({ state: line.state, model: arm.id, questions: line.questions }, line.order),
      );
      return response;
    },
    close: () => pool.close(),
  };
}

/**
 * The registry with `id` running another variant: a synthetic model's folder of that dtype (fp32 and
 * int8 from the generator; fp16, q4 and q4f16 converted from its fp32 weights, as the export-flavor
 * fixtures are), else that ONNX file of its folder.
 */
async function withVariant(registry: Registry, id: string, entry: ModelEntry, variant: string): Promise<Registry> {
  let changed: ModelEntry = { ...entry, variant };
  if (entry.synthetic) {
    // The generator is imported only for synthetic models (a production image leaves it out).
    const { DTYPES, synthModelDir } = await import('../../model-files/index.js');
    const s = entry.synthetic;
    const shape = s.shape as Parameters<typeof synthModelDir>[0];
    if ((DTYPES as readonly string[]).includes(variant) && s.weights !== undefined) {
      // Written from trained weights: that dtype's folder beside it, from the same weights.
      const path = join(dirname(entry.path), `${basename(entry.path).replace(/-(fp32|int8)$/, '')}-${variant}`);
      changed = { ...changed, path, synthetic: { ...s, dtype: variant } };
    } else if ((DTYPES as readonly string[]).includes(variant)) {
      const dir = synthModelDir(shape, variant as Parameters<typeof synthModelDir>[1], s.positionIds ?? true);
      changed = { ...changed, path: relative(dirname(registry.file), dir), synthetic: { ...s, dtype: variant } };
    } else if (s.weights !== undefined) {
      throw new ArmError(`model ${id} is written from trained weights: its variants are ${DTYPES.join(', ')}`);
    } else if (variant === 'fp16' || variant === 'q4' || variant === 'q4f16') {
      const { ensureSynthVariant } = await import('../../model-files/index.js');
      const dir = await ensureSynthVariant({ dtype: variant, shape });
      // The folder exists now (its assay.json still says synthetic); nothing left to generate.
      const { synthetic: _generated, ...rest } = changed;
      changed = { ...rest, path: relative(dirname(registry.file), dir) };
    } else {
      throw new ArmError(
        `synthetic model ${id}: no ${variant} variant is generated (${[...DTYPES, 'fp16', 'q4', 'q4f16'].join(', ')})`,
      );
    }
  }
  return { ...registry, models: { ...registry.models, [id]: changed } };
}

/** A registry whose default is a synthetic model of `shape` (fp32; another dtype by a variant arm). */
export async function syntheticShapeRegistry(shape: string, base: Registry): Promise<Registry> {
  const { SHAPE_NAMES, synthModelDir } = await import('../../model-files/index.js');
  if (!(SHAPE_NAMES as readonly string[]).includes(shape))
    throw new ArmError(`--shape must be one of ${SHAPE_NAMES.join(', ')}`);
  const id = `synthetic-${shape}`;
  const dir = synthModelDir(shape as Parameters<typeof synthModelDir>[0], 'fp32');
  const entry: ModelEntry = {
    path: relative(dirname(base.file), dir),
    synthetic: { shape, dtype: 'fp32' },
    variant: 'fp32',
    description: `Synthetic ${shape} decoder with random weights`,
    release_date: '2026-11-22',
  };
  return { ...base, default: id, models: { ...base.models, [id]: entry } };
}

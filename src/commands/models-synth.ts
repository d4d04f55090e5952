// assay models synth: writes synthetic model folders (random weights, or trained ones from
// models/trained/). With no --shape, every synthetic model the registry declares whose folder is
// missing or stale (what `npm start` runs before `assay serve`); with --shape/--dtype, one folder.
// The server never generates models.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadRegistry, type Registry } from '../registry/index.js';
import { synthModelCurrent } from '../model-files/index.js';
import {
  DTYPES,
  ensureSynthModel,
  SHAPE_NAMES,
  type EnsureOptions,
  type ShapeName,
  type SynthDtype,
} from '../model-files/index.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import { parseCommand, resolveIo, type CommandIo } from './common.js';

const FLAGS = commandFlags({
  head: `Usage: assay models synth [--registry FILE] [--model ID]
       assay models synth --shape ${SHAPE_NAMES.join('|')} --dtype ${DTYPES.join('|')} [options]

Writes synthetic model folders: the Hugging Face ONNX export layout with random deterministic
weights and the real Qwen3 tokenizer. Their answers are MEANINGLESS; speed, memory, tokenization
and numerics are real. With trained weights (a safetensors file, models/trained/) the same graph
answers what it was trained on, and its assay.json says "synthetic": false.

Without --shape: generates each synthetic model the registry declares ("synthetic" in its entry)
whose folder is missing, or only --model ID; an entry whose "synthetic" names "weights" is
rewritten when its folder was written from other weights. This is what \`npm start\` runs before
serving.
`,
  flags: {
    registry: COMMON_FLAGS.registry('registry to read'),
    model: COMMON_FLAGS.model('only this registry entry', 'ID'),
    shape: { arg: 'S', doc: 'one folder of this shape (models/shapes.json)' },
    dtype: { arg: 'D', doc: 'fp32 or int8 (default fp32)' },
    'no-position-ids': { doc: 'a graph without the position_ids input (it derives them from the mask)' },
    out: { arg: 'DIR', doc: 'where (default models/generated/<shape>-<dtype>[-nopos])' },
    seed: { arg: 'N', doc: 'weight seed' },
    weights: { arg: 'FILE', doc: 'trained weights (safetensors) instead of random ones (needs --out)' },
    force: { doc: 'regenerate even if a complete folder exists' },
  },
  column: 23,
  tail: 'Prints the folder of each model written or found complete.',
});

/**
 * Generates every declared synthetic model whose folder is missing, and rewrites the folder of one
 * written from trained weights when it was written from other weights (its manifest keeps their
 * SHA-256); returns the ids generated.
 */
export async function ensureSyntheticModels(
  registry: Registry,
  log: (line: string) => void,
  only?: string,
): Promise<string[]> {
  const made: string[] = [];
  for (const [id, entry] of Object.entries(registry.models)) {
    if (!entry.synthetic || (only !== undefined && id !== only)) continue;
    const dir = resolve(dirname(registry.file), entry.path);
    const { weights } = entry.synthetic;
    const opts: EnsureOptions = {
      ...(entry.synthetic as unknown as EnsureOptions),
      weights: weights === undefined ? undefined : resolve(dirname(registry.file), weights),
      out: dir,
    };
    const written = existsSync(join(dir, 'assay.json'));
    if (opts.weights === undefined ? written : synthModelCurrent(opts)) continue;
    log(
      written
        ? `model ${id}: folder ${dir} is stale (other weights than ${weights}, or another generator version), rewriting it`
        : `model ${id}: folder ${dir} missing, generating the ` +
            `${weights === undefined ? 'synthetic model' : `model from its trained weights (${weights})`} ` +
            `the registry declares`,
    );
    await ensureSynthModel(opts);
    made.push(id);
  }
  return made;
}

export async function run(argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand('models synth', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const log = (line: string): void => io.err(`assay models synth: ${line}\n`);
  if (values.shape === undefined) {
    let registry: Registry;
    try {
      registry = loadRegistry(parsed.registry);
    } catch (e) {
      io.err(`assay models synth: ${(e as Error).message}\n`);
      return 2;
    }
    if (values.model !== undefined && !registry.models[values.model]) {
      io.err(`assay models synth: model "${values.model}" is not in the registry ${registry.file}\n`);
      return 2;
    }
    await ensureSyntheticModels(registry, log, values.model);
    // As the help says: the folder of each declared synthetic model, written now or found complete.
    for (const [id, entry] of Object.entries(registry.models)) {
      if (entry.synthetic && (values.model === undefined || id === values.model))
        io.out(`${resolve(dirname(registry.file), entry.path)}\n`);
    }
    return 0;
  }

  const shape = values.shape as ShapeName;
  const dtype = (values.dtype ?? 'fp32') as SynthDtype;
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  const problem = !SHAPE_NAMES.includes(shape)
    ? `--shape must be one of ${SHAPE_NAMES.join(', ')}`
    : !DTYPES.includes(dtype)
      ? `--dtype must be one of ${DTYPES.join(', ')}`
      : seed !== undefined && !Number.isInteger(seed)
        ? '--seed must be an integer'
        : values.weights !== undefined && values.out === undefined
          ? '--weights needs --out (the default folders hold random weights)'
          : undefined;
  if (problem) {
    io.err(`assay models synth: ${problem}\n`);
    return 2;
  }
  const t0 = performance.now();
  const weights = values.weights === undefined ? undefined : resolve(values.weights);
  const dir = await ensureSynthModel({
    shape,
    dtype,
    positionIds: !values['no-position-ids'],
    out: values.out,
    seed,
    weights,
    force: values.force,
    log,
  });
  const manifest = JSON.parse(readFileSync(join(dir, 'assay.json'), 'utf8')) as {
    model_file: string;
    external_data: string | null;
  };
  const mib = (f: string | null): string => `${f} ${((f ? statSync(join(dir, f)).size : 0) / 2 ** 20).toFixed(1)} MiB`;
  log(
    `done in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${dir} (${mib(manifest.model_file)}${manifest.external_data ? `, ${mib(manifest.external_data)}` : ''})`,
  );
  io.out(`${dir}\n`);
  return 0;
}

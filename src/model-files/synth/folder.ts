// Writes a synthetic model folder in the Hugging Face / Optimum / transformers.js ONNX export
// layout: the decoder graph, config.json, generation_config.json and the real Qwen3 tokenizer files.
// The answers of these models are MEANINGLESS (random weights); speed, memory, tokenization and
// numerics are real. Written from trained weights (`weights`, models/trained/), the same graph
// answers what it was trained on, and the manifest says `synthetic: false` with a `trained` record.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { GraphBuilder } from '../onnx/graph-builder.js';
import { buildDecoder } from './decoder.js';
import { readWeights } from './weights.js';
import {
  DEFAULT_SEED,
  DTYPES,
  GENERATOR_VERSION,
  loadShapes,
  MEANINGLESS_WARNING,
  modelFileName,
  QWEN_TOKENIZER_FILES,
  SHAPE_NAMES,
  type ShapeManifest,
  type ShapeName,
  type SynthDtype,
} from './shapes.js';

/** The real Qwen3 tokenizer files (vendored: models/tokenizers/qwen3/). */
const TOKENIZER_FILES = QWEN_TOKENIZER_FILES;

export interface SynthOptions {
  shape: ShapeName;
  dtype: SynthDtype;
  /** Whether the graph takes position_ids (default true); without, it derives them from attention_mask. */
  positionIds?: boolean;
  seed?: number;
  /** Architecture to use instead of the shape's entry in shapes.json (tests use small variants). */
  manifest?: ShapeManifest;
  /**
   * Trained weights (a safetensors file, src/model-files/synth/weights.ts) instead of random ones: the
   * folder is then not synthetic (assay.json says `trained`, with the file's SHA-256).
   */
  weights?: string;
  /** Folder to write (created; must be empty or absent). */
  out: string;
  /** Progress lines go here (default: nothing). */
  log?: (line: string) => void;
}

export interface SynthResult {
  dir: string;
  modelFile: string;
  modelBytes: number;
  externalBytes: number;
  seconds: number;
}
const GENERATION_CONFIG = {
  bos_token_id: 151643,
  do_sample: true,
  eos_token_id: [151645, 151643],
  pad_token_id: 151643,
  repetition_penalty: 1.05,
  temperature: 0.7,
  top_k: 20,
  top_p: 0.8,
};

/** Writes a complete model folder into `out` (assay.json last: its presence means complete). */
export function synthesize(opts: SynthOptions): SynthResult {
  const t0 = performance.now();
  const shapes = loadShapes();
  const m = opts.manifest ?? shapes[opts.shape];
  if (!m) throw new Error(`unknown shape ${opts.shape}; known: ${SHAPE_NAMES.join(', ')}`);
  if (!DTYPES.includes(opts.dtype)) throw new Error(`unknown dtype ${opts.dtype}; known: ${DTYPES.join(', ')}`);
  const positionIds = opts.positionIds ?? true;
  const seed = opts.seed ?? DEFAULT_SEED;
  const dir = resolve(opts.out);
  const onnxDir = join(dir, 'onnx');
  mkdirSync(onnxDir, { recursive: true });
  const modelFile = modelFileName(opts.dtype);
  const c = m.config;

  // Big shapes always use external data (the fp32 ones are past protobuf's 2 GB limit).
  const paramCount =
    c.vocab_size * c.hidden_size +
    c.num_hidden_layers *
      (c.hidden_size * c.head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads) +
        3 * c.hidden_size * c.intermediate_size);
  const useExternal = paramCount * 4 > 256 * 1024 * 1024;
  const dataFile = `${modelFile}_data`;
  const g = new GraphBuilder(
    'main_graph',
    useExternal ? { path: join(onnxDir, dataFile), location: dataFile } : undefined,
  );
  let saved: { modelBytes: number; externalBytes: number };
  const weights = opts.weights === undefined ? undefined : readWeights(opts.weights);
  try {
    buildDecoder(g, m, { quantized: opts.dtype === 'int8', positionIds, seed, log: opts.log, weights });
    opts.log?.('encoding model');
    saved = g.save(join(onnxDir, modelFile), {
      opset: 17,
      docString: weights
        ? `${m.description} Trained weights: ${basename(weights.file)}.`
        : `${m.description} ${MEANINGLESS_WARNING}`,
    });
  } catch (e) {
    g.abort();
    throw e;
  }

  const config: Record<string, unknown> = { ...c, transformers_version: '4.51.3' };
  if (useExternal) config['transformers.js_config'] = { use_external_data_format: { [modelFile]: 1 } };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify(GENERATION_CONFIG, null, 2) + '\n');
  for (const [name, from] of Object.entries(TOKENIZER_FILES)) copyFileSync(from, join(dir, name));
  if (weights) writeFolderFiles(dir, weights.metadata.folder_files);
  const seconds = (performance.now() - t0) / 1000;
  const origin = weights
    ? {
        synthetic: false,
        trained: {
          weights: basename(weights.file),
          sha256: weightsDigest(weights.file),
          task: weights.metadata.task,
          heldout_accuracy:
            weights.metadata.heldout_accuracy === undefined
              ? undefined
              : (JSON.parse(weights.metadata.heldout_accuracy) as unknown),
        },
      }
    : { synthetic: true, warning: MEANINGLESS_WARNING };
  const manifest = {
    ...origin,
    generator_version: GENERATOR_VERSION,
    shape: opts.shape,
    dtype: opts.dtype,
    position_ids: positionIds,
    seed,
    model_file: `onnx/${modelFile}`,
    external_data: useExternal ? `onnx/${dataFile}` : null,
    parameters: paramCount,
    quantization:
      opts.dtype === 'int8'
        ? 'dynamic int8 (DynamicQuantizeLinear + MatMulInteger, int8 symmetric per-tensor weights; embedding Gather fp32)'
        : null,
    init: weights
      ? `trained (${basename(weights.file)})`
      : 'triangular (sum of two uniforms); linear std 1/sqrt(fan_in), embedding std 2/sqrt(hidden), biases std 0.1, norm weights 1 ± 0.05 std',
    tokenizer: 'Qwen3 tokenizer.json and tokenizer_config.json with chat template (models/tokenizers/qwen3/)',
    generation_seconds: Math.round(seconds * 100) / 100,
    model_bytes: saved.modelBytes,
    external_bytes: saved.externalBytes,
  };
  writeFileSync(join(dir, 'assay.json'), JSON.stringify(manifest, null, 2) + '\n');
  return {
    dir,
    modelFile: join(onnxDir, modelFile),
    modelBytes: saved.modelBytes,
    externalBytes: saved.externalBytes,
    seconds,
  };
}

/**
 * The files trained weights carry for their folder (`folder_files` in the safetensors metadata: file
 * name → JSON content), e.g. a family's decision.json and calibration.json: a model trained on a
 * family's contract declares it, as a published folder of that family does.
 */
function writeFolderFiles(dir: string, text: string | undefined): void {
  if (text === undefined) return;
  const files = JSON.parse(text) as Record<string, unknown>;
  for (const [name, content] of Object.entries(files)) {
    if (!/^[\w.-]+\.json$/.test(name) || name === 'assay.json')
      throw new Error(`weights metadata folder_files: ${JSON.stringify(name)} is not a plain JSON file name`);
    writeFileSync(join(dir, name), `${JSON.stringify(content, null, 2)}\n`);
  }
}

/** SHA-256 of a weights file: a generated folder is current only for the weights it was written from. */
export function weightsDigest(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

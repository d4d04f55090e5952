// Finding and checking the files of a Hugging Face ONNX export folder.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelLoadError } from './errors.js';
import type { EngineConfig } from './config.js';

export type Variant = NonNullable<EngineConfig['variant']>;

const VARIANT_FILES: Record<Variant, string> = {
  int8: 'model_quantized.onnx',
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  q4: 'model_q4.onnx',
};
const VARIANT_ORDER: Variant[] = ['int8', 'fp32', 'fp16', 'q4'];

/** What config.json, generation_config.json and assay.json say that the engine uses. */
export interface ModelFolder {
  dir: string;
  variant: Variant;
  onnxPath: string;
  config: Record<string, unknown>;
  /** Token ids that end an answer (the chat template's end of turn). */
  eosTokenIds: number[];
  maxContext: number;
  /** assay.json beside the export, when present (synthetic models, tuned prompts, temperature). */
  manifest: { synthetic?: boolean; warning?: string; temperature?: number; prompt_version?: string };
}

async function readJson(path: string, required: boolean): Promise<Record<string, unknown> | undefined> {
  if (!existsSync(path)) {
    if (required) throw new ModelLoadError(`${path} is missing: not a Hugging Face model export`);
    return undefined;
  }
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ModelLoadError(`${path}: invalid JSON (${(error as Error).message})`);
  }
}

export async function openModelFolder(dir: string, variant?: Variant): Promise<ModelFolder> {
  if (!existsSync(dir)) throw new ModelLoadError(`model folder ${dir} does not exist`);
  const config = (await readJson(join(dir, 'config.json'), true))!;
  const generation = (await readJson(join(dir, 'generation_config.json'), false)) ?? {};
  const manifest = ((await readJson(join(dir, 'assay.json'), false)) ?? {}) as ModelFolder['manifest'];
  if (!existsSync(join(dir, 'tokenizer.json'))) throw new ModelLoadError(`${dir}/tokenizer.json is missing`);

  const candidates = variant ? [variant] : VARIANT_ORDER;
  const found = candidates.find((v) => existsSync(join(dir, 'onnx', VARIANT_FILES[v])));
  if (!found) {
    const wanted = candidates.map((v) => `onnx/${VARIANT_FILES[v]}`).join(' or ');
    throw new ModelLoadError(`${dir}: no ${wanted}: not an ONNX decoder export`);
  }

  const eos = generation.eos_token_id ?? config.eos_token_id;
  const eosTokenIds = (Array.isArray(eos) ? eos : [eos]).filter((x): x is number => typeof x === 'number');
  const maxContext = typeof config.max_position_embeddings === 'number' ? config.max_position_embeddings : 32_768;
  return { dir, variant: found, onnxPath: join(dir, 'onnx', VARIANT_FILES[found]), config, eosTokenIds, maxContext, manifest };
}

// Finding and checking the files of an ONNX decoder export folder, in the layouts the common
// exporters write:
//   hf      config.json + onnx/model{,_fp16,_int8,_uint8,_quantized,_q4,_q4f16,_bnb4}.onnx (transformers.js, onnx-community)
//   optimum config.json + model.onnx at the root (optimum-cli export onnx --task text-generation-with-past)
//   genai   genai_config.json + model.onnx (+ model.onnx.data) at the root, no config.json (onnxruntime-genai's builder)
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileProblem } from '../../protocol/index.js';
import { ModelLoadError } from '../errors.js';
import { ModelManifestSchema, type ModelManifest } from './manifest.js';
import { DEFAULT_ORDER, ONNX_DIRS, parseVariant, variantFileNames, VARIANTS, type Variant } from './variants.js';

export type { Variant } from './variants.js';

export type Layout = 'hf' | 'optimum' | 'genai';

/** One past/present pair of the KV cache: input name → output name. */
export interface KvName {
  past: string;
  present: string;
}

/** What config.json (or genai_config.json), generation_config.json and assay.json say that the engine uses. */
export interface ModelFolder {
  dir: string;
  layout: Layout;
  /** The variant loaded (for a genai folder: the one file its config names, labelled by its suffix). */
  variant: string;
  onnxPath: string;
  /** config.json, or the same fields read from genai_config.json. */
  config: Record<string, unknown>;
  /** Token ids that end an answer (the chat template's end of turn). */
  eosTokenIds: number[];
  maxContext: number;
  /** KV input/output names when the export says them (genai_config.json); otherwise discovered from the graph. */
  kvNames?: KvName[];
  /** assay.json beside the export, when present (synthetic models, tuned prompts, temperature); checked by its schema. */
  manifest: ModelManifest;
}

async function readJson(path: string): Promise<Record<string, unknown> | undefined> {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new ModelLoadError(`${path}: invalid JSON (${(error as Error).message})`);
  }
}

/** A model folder's assay.json, checked by its schema (none: {}). */
export async function readModelManifest(dir: string): Promise<ModelManifest> {
  return readManifest(join(dir, 'assay.json'));
}

/** assay.json checked by its schema (none: {}); a problem fails the load naming the file, the field and what was expected. */
async function readManifest(path: string): Promise<ModelManifest> {
  const parsed = ModelManifestSchema.safeParse((await readJson(path)) ?? {});
  if (!parsed.success) throw new ModelLoadError(fileProblem(path, parsed.error));
  return parsed.data;
}

/** The files an export is recognised by, as found in the folder: for error messages that say what is there. */
function foundFiles(dir: string): string {
  const interesting =
    /^(config\.json|genai_config\.json|tokenizer\.json|tokenizer_config\.json|chat_template\.(jinja|json)|.*\.onnx)$/;
  const names: string[] = [];
  for (const sub of ONNX_DIRS) {
    const d = join(dir, sub);
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d).sort()) if (interesting.test(f)) names.push(sub === '.' ? f : `${sub}/${f}`);
  }
  return names.length ? `found ${names.join(', ')}` : 'found none of config.json, genai_config.json, *.onnx';
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

function ids(v: unknown): number[] {
  return (Array.isArray(v) ? v : [v]).filter((x): x is number => typeof x === 'number');
}

/** The ONNX file of a variant (or the first that exists), under onnx/ or at the root. */
function findOnnx(
  dir: string,
  variant: Variant | undefined,
): { path: string; variant: Variant; layout: Layout } | undefined {
  for (const v of variant ? [variant] : DEFAULT_ORDER) {
    for (const name of variantFileNames(v)) {
      for (const sub of ONNX_DIRS) {
        const path = join(dir, sub, name);
        if (existsSync(path)) return { path, variant: v, layout: sub === '.' ? 'optimum' : 'hf' };
      }
    }
  }
  return undefined;
}

/** The label of a file name's transformers.js suffix (model_q4.onnx → q4), else the name itself. */
function variantOfFile(file: string): string {
  return VARIANTS.find((v) => variantFileNames(v)[0] === file) ?? file;
}

/** genai_config.json → the config.json fields the engine reads, and the file and KV names it gives. */
function fromGenai(
  dir: string,
  genai: Record<string, unknown>,
  variant: Variant | undefined,
): Omit<ModelFolder, 'manifest' | 'dir'> {
  const model = (genai.model ?? {}) as Record<string, unknown>;
  const decoder = (model.decoder ?? {}) as Record<string, unknown>;
  const where = `${dir}/genai_config.json`;
  const file = typeof decoder.filename === 'string' ? decoder.filename : undefined;
  if (!file) throw new ModelLoadError(`${where} has no model.decoder.filename (${foundFiles(dir)})`);
  if (variant && variantOfFile(file) !== variant) {
    throw new ModelLoadError(
      `${where} names ${file}, one file; variant '${variant}' is not in this onnxruntime-genai folder (omit the variant)`,
    );
  }
  const onnxPath = join(dir, file);
  if (!existsSync(onnxPath)) throw new ModelLoadError(`${where} names ${file}, which is missing (${foundFiles(dir)})`);
  const heads = num(decoder.num_attention_heads);
  const layers = num(decoder.num_hidden_layers);
  const config: Record<string, unknown> = {
    num_attention_heads: heads,
    num_key_value_heads: num(decoder.num_key_value_heads) ?? heads,
    head_dim: num(decoder.head_size),
    hidden_size: num(decoder.hidden_size),
    num_hidden_layers: layers,
    vocab_size: num(model.vocab_size),
    max_position_embeddings: num(model.context_length),
    eos_token_id: model.eos_token_id,
    bos_token_id: model.bos_token_id,
    model_type: model.type,
  };
  const missing = ['num_attention_heads', 'head_dim', 'num_hidden_layers'].filter((k) => config[k] === undefined);
  if (missing.length)
    throw new ModelLoadError(
      `${where}: model.decoder lacks ${missing.map((k) => (k === 'head_dim' ? 'head_size' : k)).join(', ')}`,
    );
  const inputs = (decoder.inputs ?? {}) as Record<string, unknown>;
  const outputs = (decoder.outputs ?? {}) as Record<string, unknown>;
  const pattern = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);
  const kvNames: KvName[] = [];
  for (let i = 0; i < layers!; i++) {
    for (const [p, o, kind] of [
      [inputs.past_key_names, outputs.present_key_names, 'key'],
      [inputs.past_value_names, outputs.present_value_names, 'value'],
    ] as const) {
      kvNames.push({
        past: pattern(p, `past_key_values.%d.${kind}`).replace('%d', String(i)),
        present: pattern(o, `present.%d.${kind}`).replace('%d', String(i)),
      });
    }
  }
  return {
    layout: 'genai',
    variant: variantOfFile(file),
    onnxPath,
    config,
    eosTokenIds: ids(model.eos_token_id),
    maxContext: num(model.context_length) ?? 32_768,
    kvNames,
  };
}

export async function openModelFolder(dir: string, variantName?: string): Promise<ModelFolder> {
  if (!existsSync(dir)) throw new ModelLoadError(`model folder ${dir} does not exist`);
  const variant = variantName === undefined ? undefined : parseVariant(variantName);
  if (variantName !== undefined && !variant) {
    throw new ModelLoadError(`unknown variant '${variantName}'; known: ${VARIANTS.join(', ')} (q8 = quantized)`);
  }
  const manifest = await readManifest(join(dir, 'assay.json'));
  const config = await readJson(join(dir, 'config.json'));
  const genai = config ? undefined : await readJson(join(dir, 'genai_config.json'));
  if (!config && !genai) {
    throw new ModelLoadError(
      `${dir}: ${foundFiles(dir)}; expected config.json (a Hugging Face / Optimum export) or genai_config.json (an onnxruntime-genai build)`,
    );
  }
  if (!existsSync(join(dir, 'tokenizer.json')))
    throw new ModelLoadError(`${dir}/tokenizer.json is missing (${foundFiles(dir)})`);

  if (genai) return { dir, manifest, ...fromGenai(dir, genai, variant) };

  const found = findOnnx(dir, variant);
  if (!found) {
    const wanted = (variant ? [variant] : DEFAULT_ORDER).flatMap(variantFileNames);
    const names = [...new Set(wanted)].join(', ');
    throw new ModelLoadError(
      `${dir}: ${foundFiles(dir)}; expected ${variant ? `variant '${variant}' as ` : 'an ONNX decoder file: '}${names} under onnx/ or at the folder root`,
    );
  }
  const generation = (await readJson(join(dir, 'generation_config.json'))) ?? {};
  const eosTokenIds = ids(generation.eos_token_id ?? config!.eos_token_id);
  const maxContext = num(config!.max_position_embeddings) ?? 32_768;
  return {
    dir,
    layout: found.layout,
    variant: found.variant,
    onnxPath: found.path,
    config: config!,
    eosTokenIds,
    maxContext,
    manifest,
  };
}

// Where the files of a row family's folder are, in the layouts its public exports use: the
// tokenizer at the root or in tokenizer/ (as the authors' exporter writes it), the graph under onnx/
// or at the root by its transformers.js dtype suffix, with its external data beside it, or a split
// encoder.onnx + head.onnx. Shared by the loaders and the hub fetcher's file lists.
import { existsSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelLoadError } from '../errors.js';
import { DEFAULT_ORDER, ONNX_DIRS, parseVariant, variantFileNames, VARIANTS, type Variant } from '../model/variants.js';

/**
 * A folder's files as these rules read them: whether a path relative to the folder ('/'-separated)
 * is there. The loaders ask the disk (`onDisk`); the hub fetcher asks a repo's file listing, so a
 * fetch picks the files the loader will look for.
 */
export type HasFile = (rel: string) => boolean;

/** A folder as the rules read it: which files it has, and a JSON file's content (undefined when absent). */
export interface FolderFiles {
  has: HasFile;
  json: (rel: string) => Record<string, unknown> | undefined;
}

/** The folder on disk as a HasFile. */
export function onDisk(dir: string): HasFile {
  return (rel) => existsSync(join(dir, rel));
}

/** `name` in one of ONNX_DIRS, relative to the folder. */
const inDir = (sub: string, name: string) => (sub === '.' ? name : `${sub}/${name}`);

/** Where the tokenizer's files are, relative to the folder: `tokenizer` when it holds tokenizer.json, else '' (the root). */
export function tokenizerFolder(has: HasFile): string {
  return has('tokenizer/tokenizer.json') ? 'tokenizer' : '';
}

/** The folder holding tokenizer.json: `tokenizer/` when it has one, else the root. */
export function tokenizerDir(dir: string): string {
  const sub = tokenizerFolder(onDisk(dir));
  return sub ? join(dir, sub) : dir;
}

/**
 * An encoder family's tokenizer files, in the tokenizer's folder: tokenizer.json (required; the
 * loaders read it and tokenizer_config.json), then the files published beside them that a
 * tokenizer conversion reads (DeBERTa-v3's spm.model and added_tokens.json). Small: the fetcher
 * brings each one the repo has.
 */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'added_tokens.json',
  'spm.model',
] as const;

/** The file that declares a folder's layout (`layout`), read before any other, with its family's own settings. */
export const DECISION_FILE = 'decision.json';

/** A JSON file of the folder, or undefined when it is absent; invalid JSON fails the load naming it. */
export function readJsonFile(path: string): Record<string, unknown> | undefined {
  if (!existsSync(path)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ModelLoadError(`${path}: invalid JSON (${(error as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new ModelLoadError(`${path}: expected an object`);
  return value as Record<string, unknown>;
}

/** The graph an encoder family runs: one file, or a split encoder + head (Laya's split export). */
export type EncoderGraph = { single: string; variant: Variant } | { encoder: string; head: string };

/** The split export's two files, relative to the folder (under onnx/ or at the root), when both are there. */
export function findSplitGraph(has: HasFile): { encoder: string; head: string } | undefined {
  for (const sub of ONNX_DIRS) {
    const encoder = inDir(sub, 'encoder.onnx');
    const head = inDir(sub, 'head.onnx');
    if (has(encoder) && has(head)) return { encoder, head };
  }
  return undefined;
}

/** The single graph of a variant (or the first of DEFAULT_ORDER that is there), relative to the folder. */
export function findSingleGraph(has: HasFile, variant?: Variant): { single: string; variant: Variant } | undefined {
  for (const v of variant ? [variant] : DEFAULT_ORDER)
    for (const name of variantFileNames(v))
      for (const sub of ONNX_DIRS) {
        const single = inDir(sub, name);
        if (has(single)) return { single, variant: v };
      }
  return undefined;
}

/** The variants whose single graph the folder has, in VARIANTS order. */
export function singleGraphVariants(has: HasFile): Variant[] {
  return VARIANTS.filter((v) => findSingleGraph(has, v) !== undefined);
}

/**
 * Whether `file` holds external weights of the graph `graph` (both relative to one folder):
 * `<graph>_data`, `<graph>_data_1`, `_2` … (exports over 2 GB), or `<graph>.data`.
 */
export function isExternalData(graph: string, file: string): boolean {
  return file.startsWith(graph) && /^(_data(_\d+)?|\.data)$/.test(file.slice(graph.length));
}

/** The split export's two files (under onnx/ or at the root), when both are there. */
export function splitGraph(dir: string): { encoder: string; head: string } | undefined {
  const split = findSplitGraph(onDisk(dir));
  return split && { encoder: join(dir, split.encoder), head: join(dir, split.head) };
}

/** The single graph of a variant (or the first of DEFAULT_ORDER that exists), under onnx/ or at the root. */
export function singleGraph(dir: string, variant?: Variant): { single: string; variant: Variant } | undefined {
  const single = findSingleGraph(onDisk(dir), variant);
  return single && { single: join(dir, single.single), variant: single.variant };
}

/**
 * The graph to run: the variant asked for, else the first single graph of DEFAULT_ORDER, else the
 * split export (`allowSplit`). None: a load error naming what was looked for.
 */
export function encoderGraph(dir: string, variantName: string | undefined, allowSplit: boolean): EncoderGraph {
  const variant = variantName === undefined ? undefined : parseVariant(variantName);
  if (variantName !== undefined && !variant)
    throw new ModelLoadError(`unknown variant '${variantName}'; known: ${VARIANTS.join(', ')} (q8 = quantized)`);
  const single = singleGraph(dir, variant);
  if (single) return single;
  const split = allowSplit && !variant ? splitGraph(dir) : undefined;
  if (split) return split;
  const names = [...new Set((variant ? [variant] : DEFAULT_ORDER).flatMap(variantFileNames))].join(', ');
  throw new ModelLoadError(
    `${dir}: no ${variant ? `'${variant}' ` : ''}ONNX graph: expected ${names} under onnx/ or at the root` +
      (allowSplit && !variant ? ', or onnx/encoder.onnx with onnx/head.onnx' : ''),
  );
}

/**
 * Whether an ONNX file quantizes activations at run time with one scale per tensor
 * (DynamicQuantizeLinear, onnxruntime's quantize_dynamic): then a row's numbers depend on every other
 * row of its batch and on the padding, so such a graph runs its rows one by one. Read as bytes (an
 * op type is a plain string in the protobuf): no decode of a graph of hundreds of MB.
 */
export async function quantizesPerTensor(path: string): Promise<boolean> {
  const needle = Buffer.from('DynamicQuantizeLinear');
  const file = await open(path, 'r');
  try {
    const chunk = Buffer.alloc(8 * 1024 * 1024);
    let carry = Buffer.alloc(0);
    for (;;) {
      const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) return false;
      const view = Buffer.concat([carry, chunk.subarray(0, bytesRead)]);
      if (view.includes(needle)) return true;
      carry = view.subarray(Math.max(0, view.length - needle.length + 1));
    }
  } finally {
    await file.close();
  }
}

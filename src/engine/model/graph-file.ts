// Which graph file the session is created from: the export's own file, or its rewritten graph
// (graph-rewrite.ts), written once to the graph cache folder and reused by every later load.
// Nothing is ever written or deleted inside a model folder: operators mount models read-only.
//
// - An export with external weights (model.onnx + model.onnx_data): only the small rewritten graph
//   is written to the cache; its weights stay where they are. onnxruntime reads external data only
//   from the model file's own folder and refuses a symlink out of it, so the session is created
//   from the graph's bytes with `session.model_external_initializers_file_folder_path` set to the
//   export's folder (`externalDataDir`).
// - A single-file export (how quantized files ship): its weights are moved into an external-data
//   file next to the rewritten graph in the cache (`.assay-<id>.onnx.data`). Handing onnxruntime
//   the rewritten bytes with the weights inline would hold them twice (our buffer and onnxruntime's
//   copy); from disk the weights are read once.
// The cache folder is `--graph-cache-dir` (ASSAY_GRAPH_CACHE_DIR), else $XDG_CACHE_HOME/assay/graphs
// or ~/.cache/assay/graphs, else <os tmpdir>/assay-graphs when that cannot be written. Each rewrite
// has a folder of its own, <id>/, where <id> hashes the rewrite's version and the source file's
// path and identity (size, mtime), so an upgrade or a new export never reuses an older rewrite; a new
// rewrite removes the older ones of the same export from the cache. What the rewrite learned about
// the graph (GraphFacts) is kept beside it (`<graph>.json`), so a later load knows it without decoding.
// With `q4: 'int8'` (the default) 4-bit MatMulNBits become int8 products (q4-to-int8.ts); such a
// graph is written with all its weights (int8 ones included) into the cache, like a single-file export.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import {
  BIAS_INPUT,
  decodeModel,
  encodeModel,
  externalFiles,
  quantizePerToken,
  REWRITE_VERSION,
  rewriteHead,
  sharesActivationScales,
  type ModelProto,
} from './graph-rewrite.js';
import { defaultGraphCacheDirs } from './cache-dirs.js';
import type { ModelFolder } from './model-folder.js';
import { attentionShape, fuseAttention, type Fusion } from './fuse-attention.js';
import { sumAttentionInFloat64 } from './exact-attention.js';
import { aiOnnxOpset, BLOCKED_QUANTIZE_OPSET, raiseOpset } from './opset.js';
import { convertQ4ToInt8, hasQ4MatMuls, inlineExternalData, type Q4Conversion } from './q4-to-int8.js';
import { startWorker, workerEntry } from '../../workers/index.js';

/** Initializers smaller than this stay inside the graph file. */
const INLINE_BYTES = 1024;
/** External data offsets are aligned so onnxruntime may map the file instead of copying it. */
const ALIGN = 4096;

/** What the rewrite learned about a graph. */
export interface GraphFacts {
  /** Activations quantized at run time with one scale per tensor: a pass's tokens share numerics (see sharesActivationScales). */
  sharesActivationScales: boolean;
  /** The folder of the export's external weights, when the rewritten graph reads them from there. */
  externalDataDir?: string;
  /** Dynamic int8 products rewritten to quantize each token's activations on their own (per-token-int8.ts). */
  perTokenInt8?: number;
  /** The 4-bit products turned into int8 ones at load (q4-to-int8.ts), when any were. */
  q4ToInt8?: Q4Conversion;
  /** The ai.onnx opset the export was raised to, from its own, for the per-token products (opset.ts). */
  raisedOpset?: { from: number; to: number };
  /** Attention layers rewritten into GroupQueryAttention (fuse-attention.ts), or why none was. */
  fusedAttention?: Fusion;
  /** Attention blocks whose Softmax and product with V sum in float64 (exact-attention.ts). */
  exactAttention?: number;
}

/** How 4-bit MatMulNBits run: through the int8 kernels (converted at load) or onnxruntime's own 4-bit kernel. */
export type Q4Kernels = 'int8' | 'native';

export interface RewrittenGraph extends GraphFacts {
  path: string;
}

/** What `<graph>.json` holds: the facts, and the export it was written from (so older rewrites of it can be found). */
interface FactsFile extends GraphFacts {
  source: string;
  /** How its 4-bit products run: rewrites of one export for each setting live side by side. */
  q4?: Q4Kernels;
  /** Whether attention was fused: both rewrites of one export live side by side too (a registry may hold both). */
  fused?: boolean;
}

export { defaultGraphCacheDirs };

/** How an export is rewritten (each choice is a rewrite of its own in the cache). */
export interface RewriteOptions {
  /** Where rewritten graphs go (default: defaultGraphCacheDirs). */
  cacheDir?: string;
  /** How 4-bit products run (default: through the int8 kernels). */
  q4?: Q4Kernels;
  /** Each token's activations quantized on their own (default: on). */
  perToken?: boolean;
  /**
   * The provider the graph runs on (default: cpu). Per-token rows are quantized in one pass
   * (opset 21) for the CPU only: CUDA's QuantizeLinear takes blocks for 4-bit types alone.
   */
  provider?: 'cpu' | 'cuda';
  /** Attention written in plain ops rewritten into GroupQueryAttention (default: on). */
  fuseAttention?: boolean;
}

/** The graph rewrite worker's one call (graph-file-worker.ts); null: the head was not recognized. */
export type GraphFileCalls = {
  rewrite: [{ folder: ModelFolder; vocab: number; options: RewriteOptions }, RewrittenGraph | null];
};

/**
 * The rewritten graph and its facts, or undefined when the head is not recognized; throws when no
 * cache folder can be written. A graph already in the cache is found without reading the model; otherwise the rewrite
 * runs in a worker thread (off the event loop, and its copy of the model is freed with the thread
 * before onnxruntime loads the result).
 */
export async function rewrittenGraph(
  folder: ModelFolder,
  vocab: number,
  options: RewriteOptions = {},
): Promise<RewrittenGraph | undefined> {
  const found = await cached(await targets(folder, options));
  if (found) return found;
  const entry = workerEntry('graph-file-worker', import.meta.url);
  const { worker, channel } = startWorker<GraphFileCalls>(
    entry.filename,
    { workerData: entry.workerData },
    { name: 'the graph rewrite worker', decodeError: (m) => new Error(String(m)) },
  );
  try {
    return (await channel.call('rewrite', { folder, vocab, options })) ?? undefined;
  } finally {
    await worker.terminate();
  }
}

/** A file's size in bytes (0: missing). */
const sizeOf = (path: string): Promise<number> =>
  stat(path).then(
    (s) => s.size,
    () => 0,
  );

async function cached(candidates: string[]): Promise<RewrittenGraph | undefined> {
  for (const found of candidates.filter((t) => existsSync(t))) {
    const facts = await readFacts(found);
    // A weights file of its own that is empty: an older Assay's rewrite whose write failed in another
    // folder first (writeGraph). It cannot load: written again.
    if (facts.externalDataDir || (await sizeOf(`${found}.data`)) > 0) return { path: found, ...facts };
  }
  return undefined;
}

/** The facts kept beside a rewritten graph; a missing or unreadable file gives the cautious answer. */
async function readFacts(graph: string): Promise<GraphFacts> {
  try {
    const facts = JSON.parse(await readFile(`${graph}.json`, 'utf8')) as Partial<FactsFile>;
    return {
      sharesActivationScales: facts.sharesActivationScales !== false,
      ...(facts.externalDataDir ? { externalDataDir: facts.externalDataDir } : {}),
      ...(facts.q4ToInt8 ? { q4ToInt8: facts.q4ToInt8 } : {}),
      ...(facts.perTokenInt8 ? { perTokenInt8: facts.perTokenInt8 } : {}),
      ...(facts.raisedOpset ? { raisedOpset: facts.raisedOpset } : {}),
      ...(facts.fusedAttention ? { fusedAttention: facts.fusedAttention } : {}),
      ...(facts.exactAttention ? { exactAttention: facts.exactAttention } : {}),
    };
  } catch {
    return { sharesActivationScales: true };
  }
}

/** Where the rewritten graph of an export goes, in order of preference: <cache>/<id>/<name>.assay-<id>.onnx. */
async function targets(folder: ModelFolder, options: RewriteOptions): Promise<string[]> {
  const { cacheDir, q4 = 'int8', perToken = true, provider = 'cpu', fuseAttention: fuse = true } = options;
  const source = resolve(folder.onnxPath);
  const info = await stat(source);
  const variant = `${q4}${perToken ? '' : ':per-tensor'}${provider === 'cpu' ? '' : `:${provider}`}${fuse ? '' : ':unfused'}`;
  const id = createHash('sha256')
    .update(`${REWRITE_VERSION}:${source}:${info.size}:${info.mtimeMs}:${variant}`)
    .digest('hex')
    .slice(0, 12);
  const name = basename(source).replace(/\.onnx$/, `.assay-${id}.onnx`);
  return (cacheDir ? [resolve(cacheDir)] : defaultGraphCacheDirs()).map((root) => join(root, id, name));
}

/** Rewrites the export and writes the result to the cache (the worker's job); see rewrittenGraph. */
export async function writeRewrittenGraph(
  folder: ModelFolder,
  vocab: number,
  options: RewriteOptions = {},
): Promise<RewrittenGraph | undefined> {
  const { q4 = 'int8', perToken = true, provider = 'cpu', fuseAttention: fuse = true } = options;
  const source = resolve(folder.onnxPath);
  const candidates = await targets(folder, options);
  const found = await cached(candidates);
  if (found) return found;

  const model = decodeModel(await readFile(source));
  const facts: GraphFacts = { sharesActivationScales: sharesActivationScales(model) };
  if (!rewriteHead(model, vocab)) return undefined;
  // Only an export with 4-bit products has a rewrite per 4-bit setting (kept side by side).
  const q4Setting = hasQ4MatMuls(model) ? q4 : undefined;
  if (provider === 'cpu' && ((perToken && facts.sharesActivationScales) || q4Setting === 'int8')) {
    // Opset 21 quantizes each row over its own scale in one pass; where it cannot be, the per-token
    // products divide the rows first (per-token-int8.ts).
    const from = aiOnnxOpset(model);
    if (from < BLOCKED_QUANTIZE_OPSET && raiseOpset(model)) facts.raisedOpset = { from, to: BLOCKED_QUANTIZE_OPSET };
  }
  if (perToken) {
    // Each token's activations quantized on their own: a token's numbers no longer depend on its pass.
    const rewritten = quantizePerToken(model);
    if (rewritten > 0) facts.perTokenInt8 = rewritten;
  }
  if (q4Setting === 'int8') {
    // The int8 weights are new: the whole graph's weights go to the cache (onnxruntime reads external
    // data from one folder only).
    inlineExternalData(model, dirname(source));
    const conversion = convertQ4ToInt8(model);
    if (conversion.nodes > 0) facts.q4ToInt8 = conversion;
  }
  // Products that quantize each token's row: attention must compute a token the same in any pass.
  const rowsQuantized = Boolean(facts.perTokenInt8 || facts.q4ToInt8);
  if (fuse) {
    // Last: its If subgraphs would keep the opset where it was (opset.ts).
    facts.fusedAttention = fuseAttention(
      model,
      attentionShape(folder.config),
      provider,
      biasInput(model),
      rowsQuantized,
    );
  }
  if (rowsQuantized) {
    // Per-token int8 turns a summation-order change in attention into int8 steps now and then: the
    // attention that runs as exported sums in float64, so a token computes the same in any pass.
    const exact = sumAttentionInFloat64(model, pastElemType(model));
    if (exact > 0) facts.exactAttention = exact;
  }
  facts.sharesActivationScales = sharesActivationScales(model); // what the rewritten graph does
  // External weights stay in the export's folder; the session reads them from there.
  if (externalFiles(model).length > 0) facts.externalDataDir = dirname(source);
  const failures: string[] = [];
  for (const target of candidates) {
    try {
      await mkdir(dirname(target), { recursive: true });
      await writeGraph(model, target, { ...facts, source, fused: fuse, ...(q4Setting ? { q4: q4Setting } : {}) });
      await removeOlderRewrites(target, source, q4Setting, fuse);
      return { path: target, ...facts };
    } catch (error) {
      failures.push((error as Error).message); // not writable here: try the next place
    }
  }
  throw new Error(`no graph cache folder can be written (${failures.join('; ')}); set --graph-cache-dir`);
}

/**
 * Removes the rewrites of the same export (and the same 4-bit and attention settings) that an older Assay or an
 * older file of it left in the cache (their <id>/ folders): a single-file export's rewrite holds a copy of its weights, a
 * gigabyte each for a 0.5B int8 model. A session already running from one keeps its open file.
 */
async function removeOlderRewrites(
  target: string,
  source: string,
  q4: Q4Kernels | undefined,
  fused: boolean,
): Promise<void> {
  const root = dirname(dirname(target));
  const own = basename(dirname(target));
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === own || !/^[0-9a-f]{12}$/.test(entry.name)) continue;
    const dir = join(root, entry.name);
    const facts = (await readdir(dir)).filter((f) => f.endsWith('.onnx.json'));
    for (const f of facts) {
      const written = await readFile(join(dir, f), 'utf8').then(
        (t) => JSON.parse(t) as Partial<FactsFile>,
        () => undefined,
      );
      if (
        written?.source === source &&
        (written.q4 === undefined || written.q4 === q4) &&
        (written.fused === undefined || written.fused === fused)
      ) {
        await rm(dir, { recursive: true, force: true });
        break;
      }
    }
  }
}

/**
 * Writes the graph (and, unless its weights are already external, a weights file beside it) and its
 * facts, atomically. Also the row-reuse rewrite's (row-reuse/graph-cache.ts), with facts of its own.
 */
export async function writeGraph<F extends { externalDataDir?: string }>(
  model: ModelProto,
  target: string,
  facts: F,
): Promise<void> {
  const partial = `${target}.${process.pid}.tmp`;
  const dataName = `${basename(target)}.data`;
  const shared = facts.externalDataDir !== undefined;
  // externalize moves the weights out of the model: put back on failure, so the next cache folder
  // tried gets them (else it would write an empty weights file that the graph's references point into).
  let restore = (): void => {};
  try {
    if (!shared) restore = await externalize(model, `${partial}.data`, dataName);
    await writeFile(partial, encodeModel(model));
    await writeFile(`${partial}.json`, `${JSON.stringify(facts)}\n`);
    if (!shared) await rename(`${partial}.data`, join(dirname(target), dataName));
    await rename(`${partial}.json`, `${target}.json`);
    await rename(partial, target); // last: its presence means complete
  } catch (error) {
    restore();
    await rm(partial, { force: true });
    await rm(`${partial}.data`, { force: true });
    await rm(`${partial}.json`, { force: true });
    throw error;
  }
}

type Tensor = NonNullable<NonNullable<ModelProto['graph']>['initializer']>[number];

/**
 * Moves every large inline initializer's bytes into `file`, leaving an external-data reference to
 * `location`. Returns what puts them back inline (the model as it was), for a caller whose write failed.
 */
export async function externalize(model: ModelProto, file: string, location: string): Promise<() => void> {
  const moved: Array<{ t: Tensor; was: Pick<Tensor, 'rawData' | 'dataLocation' | 'externalData'> }> = [];
  const restore = (): void => {
    for (const { t, was } of moved.splice(0)) Object.assign(t, was);
  };
  const handle = await open(file, 'w');
  try {
    let offset = 0;
    for (const t of model.graph?.initializer ?? []) {
      const raw = t.rawData;
      if (!raw || raw.byteLength < INLINE_BYTES) continue;
      const start = Math.ceil(offset / ALIGN) * ALIGN;
      await handle.write(raw, 0, raw.byteLength, start);
      offset = start + raw.byteLength;
      moved.push({ t, was: { rawData: raw, dataLocation: t.dataLocation, externalData: t.externalData } });
      t.rawData = new Uint8Array(0);
      t.dataLocation = 1; // EXTERNAL
      t.externalData = [
        { key: 'location', value: location },
        { key: 'offset', value: String(start) },
        { key: 'length', value: String(raw.byteLength) },
      ];
    }
  } catch (error) {
    restore();
    throw error;
  } finally {
    await handle.close();
  }
  return restore;
}

/** The attention bias input, when the rewrite gave the graph one (packed passes). */
function biasInput(model: ModelProto): string | undefined {
  return (model.graph?.input ?? []).some((i) => i.name === BIAS_INPUT) ? BIAS_INPUT : undefined;
}

/** The element type of the graph's past KV inputs (past_key_values.*), when it has them. */
function pastElemType(model: ModelProto): number | undefined {
  return (
    model.graph?.input?.find((i) => i.name?.startsWith('past_key_values.'))?.type?.tensorType?.elemType ?? undefined
  );
}

// Which graph file the session is created from: the export's own file, or its rewritten graph
// (graph-rewrite.ts), written once to disk and reused by every later load.
//
// - An export with external weights (model.onnx + model.onnx_data): the small rewritten graph is
//   written beside it (onnx/<name>.assay-<id>.onnx) and shares its weights file: onnxruntime reads
//   external data only from the model file's own folder. A read-only folder runs the export as is.
// - A single-file export (how quantized files ship): its weights are moved into an external-data
//   file next to the rewritten graph (`.assay-<id>.onnx.data`), beside the export when the folder is
//   writable, else under the graph cache folder. Handing onnxruntime the rewritten bytes in memory
//   would hold the file twice (our buffer and onnxruntime's copy); from disk the weights are read once.
// The <id> hashes the rewrite's version and the source file's identity (size, mtime), so an
// upgrade or a new export never reuses an older rewrite. What the rewrite learned about the graph
// (GraphFacts) is kept beside it (`<graph>.json`), so a later load knows it without decoding.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { once } from 'node:events';
import { basename, dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { decodeModel, encodeModel, externalFiles, REWRITE_VERSION, rewriteHead, sharesActivationScales, type ModelProto } from './graph-rewrite.js';
import type { ModelFolder } from './model-folder.js';
import { workerExecArgv, workerFile } from './worker-args.js';

/** Initializers smaller than this stay inside the graph file. */
const INLINE_BYTES = 1024;
/** External data offsets are aligned so onnxruntime may map the file instead of copying it. */
const ALIGN = 4096;

/** What the rewrite learned about a graph. */
export interface GraphFacts {
  /** Activations quantized at run time with one scale per tensor: a pass's tokens share numerics (see sharesActivationScales). */
  sharesActivationScales: boolean;
}

export interface RewrittenGraph extends GraphFacts {
  path: string;
}

/**
 * The rewritten graph and its facts, or undefined when the head is not recognized or nothing can be
 * written. A graph already on disk is found without reading the model; otherwise the rewrite runs
 * in a worker thread (off the event loop, and its copy of the model is freed with the thread
 * before onnxruntime loads the result).
 */
export async function rewrittenGraph(folder: ModelFolder, vocab: number, cacheDir?: string): Promise<RewrittenGraph | undefined> {
  const found = (await targets(folder, cacheDir)).find((t) => existsSync(t));
  if (found) return { path: found, ...(await readFacts(found)) };
  const worker = new Worker(workerFile('graph-file-worker', import.meta.url), { workerData: { folder, vocab, cacheDir }, execArgv: workerExecArgv() });
  try {
    const [reply] = (await once(worker, 'message')) as [{ graph?: RewrittenGraph; error?: string }];
    if (reply.error !== undefined) throw new Error(reply.error);
    return reply.graph;
  } finally {
    await worker.terminate();
  }
}

/** The facts kept beside a rewritten graph; a missing or unreadable file gives the cautious answer. */
async function readFacts(graph: string): Promise<GraphFacts> {
  try {
    const facts = JSON.parse(await readFile(`${graph}.json`, 'utf8')) as Partial<GraphFacts>;
    return { sharesActivationScales: facts.sharesActivationScales !== false };
  } catch {
    return { sharesActivationScales: true };
  }
}

/** Where the rewritten graph of an export goes: beside it, else under the cache folder. */
async function targets(folder: ModelFolder, cacheDir?: string): Promise<string[]> {
  const source = folder.onnxPath;
  const info = await stat(source);
  const id = createHash('sha256').update(`${REWRITE_VERSION}:${source}:${info.size}:${info.mtimeMs}`).digest('hex').slice(0, 12);
  const name = basename(source).replace(/\.onnx$/, `.assay-${id}.onnx`);
  return [join(dirname(source), name), join(cacheDir ?? join(tmpdir(), 'assay-graphs'), id, name)];
}

/** Rewrites the export and writes the result (the worker's job); see rewrittenGraph. */
export async function writeRewrittenGraph(folder: ModelFolder, vocab: number, cacheDir?: string): Promise<RewrittenGraph | undefined> {
  const source = folder.onnxPath;
  const candidates = await targets(folder, cacheDir);
  for (const target of candidates) if (existsSync(target)) return { path: target, ...(await readFacts(target)) };

  const model = decodeModel(await readFile(source));
  const facts: GraphFacts = { sharesActivationScales: sharesActivationScales(model) };
  if (!rewriteHead(model, vocab)) return undefined;
  const shared = externalFiles(model).length > 0;
  // A graph that shares the export's weights file can only live beside it.
  for (const target of shared ? candidates.slice(0, 1) : candidates) {
    try {
      await mkdir(dirname(target), { recursive: true });
      await writeGraph(model, target, shared, facts);
      await removeOlderRewrites(target);
      return { path: target, ...facts };
    } catch {
      // not writable here: try the next place
    }
  }
  return undefined;
}

/**
 * Removes the rewrites an older Assay or an older file of this export left beside `target` (same
 * export name, another id): a single-file export's rewrite holds a copy of its weights, a gigabyte
 * each for a 0.5B int8 model. A session already running from one keeps its open file.
 */
async function removeOlderRewrites(target: string): Promise<void> {
  const name = basename(target);
  const stem = name.slice(0, name.lastIndexOf('.assay-'));
  const older = new RegExp(`^${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.assay-[0-9a-f]{12}\\.onnx(\\.data|\\.json)?$`);
  for (const file of await readdir(dirname(target))) {
    if (older.test(file) && !file.startsWith(name)) await rm(join(dirname(target), file), { force: true });
  }
}

/** Writes the graph (and, unless its weights are already external, a weights file beside it) and its facts, atomically. */
async function writeGraph(model: ModelProto, target: string, shared: boolean, facts: GraphFacts): Promise<void> {
  const partial = `${target}.${process.pid}.tmp`;
  const dataName = `${basename(target)}.data`;
  try {
    if (!shared) await externalize(model, `${partial}.data`, dataName);
    await writeFile(partial, encodeModel(model));
    await writeFile(`${partial}.json`, `${JSON.stringify(facts)}\n`);
    if (!shared) await rename(`${partial}.data`, join(dirname(target), dataName));
    await rename(`${partial}.json`, `${target}.json`);
    await rename(partial, target); // last: its presence means complete
  } catch (error) {
    await rm(partial, { force: true });
    await rm(`${partial}.data`, { force: true });
    await rm(`${partial}.json`, { force: true });
    throw error;
  }
}

/** Moves every large inline initializer's bytes into `file`, leaving an external-data reference to `location`. */
export async function externalize(model: ModelProto, file: string, location: string): Promise<void> {
  const handle = await open(file, 'w');
  try {
    let offset = 0;
    for (const t of model.graph?.initializer ?? []) {
      const raw = t.rawData;
      if (!raw || raw.byteLength < INLINE_BYTES) continue;
      const start = Math.ceil(offset / ALIGN) * ALIGN;
      await handle.write(raw, 0, raw.byteLength, start);
      offset = start + raw.byteLength;
      t.rawData = new Uint8Array(0);
      t.dataLocation = 1; // EXTERNAL
      t.externalData = [
        { key: 'location', value: location },
        { key: 'offset', value: String(start) },
        { key: 'length', value: String(raw.byteLength) },
      ];
    }
  } finally {
    await handle.close();
  }
}

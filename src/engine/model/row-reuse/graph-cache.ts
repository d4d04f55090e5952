// The continuation graph of a causal-row export (rewrite.ts), written once to the graph cache folder
// as the decoder rewrites are (graph-file.ts: the same folders, <cache>/<id>/, the id hashing the
// rewrite's version and the export file's path, size and mtime; written atomically; the export's
// folder is never written). Its weights stay in the export's external data (the session is told
// where: externalDataDir); a single-file export's weights move to a file beside the rewrite. A graph
// the rewrite does not recognise is remembered too: its verdict, the reason, is kept in the same
// place, so a later load answers without decoding the export again.
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { writeGraph } from '../graph-file.js';
import { decodeModel, externalFiles } from '../graph-rewrite.js';
import { smallConstants } from './constants.js';
import type { RowGraphFacts } from './names.js';
import { rewriteRowGraph } from './rewrite.js';
import { targetsOf, type RowGraphFile } from './verdict.js';

/** A recognised export's continuation graph, ready to open. */
export interface RowGraph {
  path: string;
  facts: RowGraphFacts;
  /** The export's folder, when the rewritten graph reads its weights from there. */
  externalDataDir?: string;
}

/**
 * The continuation graph of the export at `source` (from the cache, or rewritten and written there),
 * or `{ reason }` when the rewrite does not recognise it. Throws only when no cache folder can be written.
 */
export async function rowReuseGraph(
  source: string,
  options: { cacheDir?: string } = {},
): Promise<RowGraph | { reason: string }> {
  const file = resolve(source);
  const candidates = await targets(file, options.cacheDir);
  for (const target of candidates) {
    const known = await readJson(`${target}.json`);
    if (known?.reason) return { reason: known.reason };
    if (known?.facts && existsSync(target)) return graphOf(target, known);
  }
  const model = decodeModel(await readFile(file));
  const facts = rewriteRowGraph(model, await smallConstants(model));
  const failures: string[] = [];
  for (const target of candidates) {
    try {
      await mkdir(dirname(target), { recursive: true });
      if (typeof facts === 'string') {
        await writeFile(`${target}.json`, `${JSON.stringify({ rowsSource: file, reason: facts })}\n`);
      } else {
        const written: RowGraphFile = { rowsSource: file, facts };
        if (externalFiles(model).length > 0) written.externalDataDir = dirname(file);
        await writeGraph(model, target, written);
      }
      await removeOlder(target, file);
      return typeof facts === 'string' ? { reason: facts } : graphOf(target, (await readJson(`${target}.json`))!);
    } catch (error) {
      failures.push((error as Error).message); // not writable here: the next place
    }
  }
  throw new Error(`no graph cache folder can be written (${failures.join('; ')}); set --graph-cache-dir`);
}

/**
 * Remembers beside a continuation graph that the load-time probe refused it: the next load of the
 * same export answers with the reason (rowReuseGraph) and runs whole rows at once.
 */
export async function rememberRefusal(graph: RowGraph, reason: string): Promise<void> {
  const known = await readJson(`${graph.path}.json`);
  if (!known) return;
  await writeFile(`${graph.path}.json`, `${JSON.stringify({ rowsSource: known.rowsSource, reason })}\n`);
  await rm(graph.path, { force: true });
}

function graphOf(path: string, known: RowGraphFile): RowGraph {
  return { path, facts: known.facts!, ...(known.externalDataDir ? { externalDataDir: known.externalDataDir } : {}) };
}

async function readJson(path: string): Promise<RowGraphFile | undefined> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<RowGraphFile>;
    return typeof parsed.rowsSource === 'string' ? (parsed as RowGraphFile) : undefined;
  } catch {
    return undefined;
  }
}

/** <cache>/<id>/<name>.assay-rows-<id>.onnx, in order of preference. */
async function targets(source: string, cacheDir: string | undefined): Promise<string[]> {
  return targetsOf(source, await stat(source), cacheDir);
}

/** Removes the row rewrites of the same export that an older Assay or an older file of it left (their <id>/ folders). */
async function removeOlder(target: string, source: string): Promise<void> {
  const root = dirname(dirname(target));
  const own = basename(dirname(target));
  for (const entry of await readdir(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === own || !/^[0-9a-f]{12}$/.test(entry.name)) continue;
    const dir = join(root, entry.name);
    for (const f of (await readdir(dir)).filter((n) => n.endsWith('.onnx.json'))) {
      if ((await readJson(join(dir, f)))?.rowsSource === source) {
        await rm(dir, { recursive: true, force: true });
        break;
      }
    }
  }
}

// The rewritten graph goes to the first cache folder that can be written (graph-file.ts). A write
// that fails in the first folder after the weights were moved out of the model (externalize) must
// not leave the next folder a graph whose weights file is empty: that graph would fail to load at
// every start ("External initializer ... file_length: 0") until the cache is cleared by hand.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeRewrittenGraph } from '../../src/engine/model/graph-file.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { tinyFp32 } from './fixtures.js';

const saved = { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, TMPDIR: process.env.TMPDIR };
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe('the graph cache, when the first folder fails mid-write', () => {
  it('writes the next folder a complete rewrite (its weights file as full as one written first time)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'assay-cache-fallback-'));
    const dir = join(root, 'model');
    cpSync(await tinyFp32(), dir, { recursive: true });
    const folder = await openModelFolder(dir);

    // A rewrite on its own, to know the graph's cache id and name and its weights file's size.
    const reference = (await writeRewrittenGraph(folder, 151936, { cacheDir: join(root, 'reference') }))!;
    const id = basename(dirname(reference.path));
    const weights = statSync(`${reference.path}.data`).size;
    expect(weights).toBeGreaterThan(1_000_000);

    // The default folders: $XDG_CACHE_HOME/assay/graphs, then the OS temporary folder. In the first,
    // the graph's partial file cannot be written (a folder stands in its place), after its weights
    // file was.
    process.env.XDG_CACHE_HOME = join(root, 'xdg');
    process.env.TMPDIR = join(root, 'tmp');
    mkdirSync(process.env.TMPDIR);
    const first = join(root, 'xdg', 'assay', 'graphs', id, basename(reference.path));
    mkdirSync(`${first}.${process.pid}.tmp`, { recursive: true });

    const written = (await writeRewrittenGraph(folder, 151936))!;
    expect(written.path).toBe(join(root, 'tmp', 'assay-graphs', id, basename(reference.path)));
    expect(statSync(`${written.path}.data`).size).toBe(weights);
    expect(readFileSync(`${written.path}.data`).equals(readFileSync(`${reference.path}.data`))).toBe(true);
  });

  it('writes again an entry whose weights file is empty (as an older Assay could leave one), instead of loading it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'assay-cache-empty-'));
    const dir = join(root, 'model');
    cpSync(await tinyFp32(), dir, { recursive: true });
    const folder = await openModelFolder(dir);
    const cacheDir = join(root, 'cache');
    const first = (await writeRewrittenGraph(folder, 151936, { cacheDir }))!;
    const weights = statSync(`${first.path}.data`).size;
    truncateSync(`${first.path}.data`, 0);
    const again = (await writeRewrittenGraph(folder, 151936, { cacheDir }))!;
    expect(again.path).toBe(first.path);
    expect(statSync(`${again.path}.data`).size).toBe(weights);
  });
});

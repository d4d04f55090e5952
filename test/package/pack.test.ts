// The published package: `npm pack`, then plain JavaScript (an .mjs file, no TypeScript, no tsx)
// imports the client, the engine and the server through the package's conditional exports, and the
// compiled engine answers on the tiny model (its planner and graph-rewrite workers run compiled code).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let tmp: string;
let files: string[];

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'assay-pack-'));
  // dist/ is fresh: npm test builds before running the suite (npm pack would run the build again).
  const [info] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp], {
      cwd: ROOT,
      encoding: 'utf8',
    }),
  ) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  files = info!.files.map((f) => f.path);
  const pkg = join(tmp, 'node_modules', 'assay');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['xzf', join(tmp, info!.filename), '-C', pkg, '--strip-components=1']);
  // The package's dependencies, as an install would place them beside it.
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name.startsWith('.') || name === 'assay') continue;
    symlinkSync(join(ROOT, 'node_modules', name), join(tmp, 'node_modules', name));
  }
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('ships compiled JavaScript with declarations for every export, and no TypeScript sources', () => {
    for (const f of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/engine/index.d.ts',
      'dist/api/server.d.ts',
      'dist/client/index.d.ts',
      'dist/engine/prompting/planner/worker.js',
      'bin/assay.js',
      'models/registry.json',
    ]) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.some((f) => f.includes('.tsbuildinfo'))).toBe(false);
  });

  it('ships the model-file generators the CLI runs (synth, fetch, ONNX helpers) and no development tool', () => {
    for (const f of [
      'dist/model-files/synth/index.js',
      'dist/model-files/hub/fetch.js',
      'dist/model-files/onnx/graph-builder.js',
      'dist/web/playground/main.js',
      'dist/web/playground.html',
    ])
      expect(files, f).toContain(f);
    // The flavor fixtures, the GGUF writer and the training scripts live in the repository's tools/, never in the package.
    expect(files.filter((f) => /(^|\/)(tools|gguf|train)\//.test(f) || /flavors\.|\.py$/.test(f))).toEqual([]);
  });

  it('a plain .mjs file imports the client, the engine and the server, and the engine answers', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const script = join(tmp, 'check.mjs');
    writeFileSync(
      script,
      `import { AssayClient, AssayAPIError, schemas } from 'assay/client';
import { loadEvaluator } from 'assay/engine';
import { buildServer } from 'assay/server';
import * as assay from 'assay';
const evaluator = await loadEvaluator({ modelDir: process.argv[2], threads: 1 });
const { answers, usage } = await evaluator.evaluate({ state: 'The app crashes on start.', questions: { bug: { type: 'noul', instructions: 'Is this a bug report?' } } });
await evaluator.close();
const request = schemas.SystemOneRequestSchema.safeParse({ state: 'x', model: 'm', questions: { q: { type: 'noul' } } }).success;
console.log(JSON.stringify({ client: typeof AssayClient, apiError: typeof AssayAPIError, server: typeof buildServer, root: typeof assay.loadEvaluator, answer: answers.bug.type, p: answers.bug.noul, tokens: usage.input_tokens, request }));
`,
    );
    const out = execFileSync(process.execPath, [script, modelDir], { cwd: tmp, encoding: 'utf8' });
    const r = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(r).toMatchObject({
      client: 'function',
      apiError: 'function',
      server: 'function',
      root: 'function',
      answer: 'noul',
      request: true,
    });
    expect(r.p).toBeGreaterThan(0);
    expect(r.p).toBeLessThan(1);
    expect(r.tokens).toBeGreaterThan(10);
  });

  it('the packed bin runs the compiled CLI', () => {
    const bin = join(tmp, 'node_modules', 'assay', 'bin', 'assay.js');
    expect(existsSync(bin)).toBe(true);
    expect(execFileSync(process.execPath, [bin, 'serve', '--help'], { encoding: 'utf8' })).toContain(
      'Usage: assay serve',
    );
  });
});

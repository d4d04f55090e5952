// A malformed registry or assay.json stops the command, as a user runs it (bin/assay.js over dist/,
// built by npm test first): exit status non-zero, and one line naming the file, the path in it and
// what was expected — never a stack trace.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { tinyFp32 } from '../engine/fixtures.js';

let dir: string;

/** Runs bin/assay.js; its exit status and stderr. */
async function assay(...args: string[]): Promise<{ code: number; stderr: string }> {
  const { ASSAY_REGISTRY: _, ...env } = process.env; // --registry names the file
  return promisify(execFile)(process.execPath, ['bin/assay.js', ...args], {
    env,
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

function registry(name: string, entry: Record<string, unknown>): string {
  const file = join(dir, name);
  const models = { 'm-1': { description: 'd', release_date: '2026-01-01', ...entry } };
  writeFileSync(file, JSON.stringify({ default: 'm-1', models }));
  return file;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'assay-formats-'));
});

describe('a malformed file stops the command', () => {
  it('a registry with a misspelt field: assay models and assay serve name the file, the field and the one meant', async () => {
    const file = registry('registry.json', { path: 'm', varient: 'int8' });
    const line = `model registry ${file}: models["m-1"].varient: unknown field: expected "variant"\n`;
    expect(await assay('models', '--registry', file)).toEqual({ code: 1, stderr: `assay models: ${line}` });
    expect(await assay('serve', '--port', '0', '--registry', file)).toEqual({
      code: 2,
      stderr: `assay serve: ${line}`,
    });
  });

  it('a registry with a wrong type: the path and the expectation', async () => {
    const file = registry('typed.json', { path: 'm', release_date: '22 Nov 2026' });
    expect(await assay('models', '--registry', file)).toEqual({
      code: 1,
      stderr: `assay models: model registry ${file}: models["m-1"].release_date: expected a date as YYYY-MM-DD\n`,
    });
  });

  it("a model folder's assay.json: assay eval names the file, the field and what was expected", async () => {
    const source = await tinyFp32();
    const model = join(dir, 'model');
    mkdirSync(model);
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join(source, f), join(model, f));
    symlinkSync(join(source, 'onnx'), join(model, 'onnx'));
    writeFileSync(join(model, 'assay.json'), JSON.stringify({ synthetic: true, answer_temperature: { noul: -1 } }));
    const file = registry('eval.json', { path: 'model' });
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ text: 'hello' }));
    writeFileSync(join(dir, 'questions.json'), JSON.stringify({ q: { type: 'noul', instructions: 'A greeting?' } }));
    const run = await assay(
      'eval',
      '--registry',
      file,
      '--state',
      join(dir, 'state.json'),
      '--questions',
      join(dir, 'questions.json'),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${model}/assay.json: answer_temperature.noul: expected a positive number\n`);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
});

// A model folder's assay.json is checked by its schema when the model loads: a problem names the
// file, the field and what was expected; the provenance fields tools write (and a newer Assay's) load.
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, ModelLoadError } from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { GENERATED_DIR } from '../../src/model-files/synth/ensure.js';
import { tinyFp32 } from './fixtures.js';

let source: string;

/** The tiny model's files, with the given assay.json (a string as is, else as JSON). */
function folderWith(manifest: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'assay-manifest-'));
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(source, f), join(dir, f));
  symlinkSync(join(source, 'onnx'), join(dir, 'onnx'));
  writeFileSync(join(dir, 'assay.json'), typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  return dir;
}

async function problem(manifest: unknown): Promise<string> {
  const dir = folderWith(manifest);
  return openModelFolder(dir).then(
    () => 'accepted',
    (e: Error) => `${e.name}: ${e.message.replace(dir, 'DIR')}`,
  );
}

beforeAll(async () => {
  source = await tinyFp32();
});

describe('assay.json', () => {
  it('a malformed assay.json fails the load naming the file, the field and what was expected', async () => {
    expect(await problem({ temperature: 'hot' })).toBe(
      'ModelLoadError: DIR/assay.json: temperature: expected a positive number',
    );
    expect(await problem({ option_rotations: 1.5 })).toBe(
      'ModelLoadError: DIR/assay.json: option_rotations: expected a whole number ≥ 1',
    );
    expect(await problem({ answer_temperature: { noul: 0 } })).toBe(
      'ModelLoadError: DIR/assay.json: answer_temperature.noul: expected a positive number',
    );
    expect(await problem({ answer_temperature: { yesno: 1 } })).toBe(
      'ModelLoadError: DIR/assay.json: answer_temperature: Unrecognized key: "yesno"',
    );
    expect(await problem({ prompt_version: 'v9' })).toBe(
      'ModelLoadError: DIR/assay.json: prompt_version: expected one of v1, letters',
    );
    expect(await problem({ synthetic: 'yes' })).toBe(
      'ModelLoadError: DIR/assay.json: synthetic: Invalid input: expected boolean, received string',
    );
    expect(await problem([1])).toBe(
      'ModelLoadError: DIR/assay.json: (top level): Invalid input: expected object, received array',
    );
    expect(await problem('{"temperature": ')).toMatch(/^ModelLoadError: DIR\/assay\.json: invalid JSON/);
    // A misspelt field would be ignored (the calibration silently lost): it is refused, naming the field meant.
    expect(await problem({ answer_temperatures: { noul: 0.5 } })).toBe(
      'ModelLoadError: DIR/assay.json: answer_temperatures: unknown field: expected "answer_temperature"',
    );
    expect(await problem({ temprature: 0.5 })).toBe(
      'ModelLoadError: DIR/assay.json: temprature: unknown field: expected "temperature"',
    );
  });

  it('fields it does not read (tool provenance, a newer Assay) load and are kept', async () => {
    const written = JSON.parse(readFileSync(join(source, 'assay.json'), 'utf8')) as Record<string, unknown>;
    const manifest = { ...written, temperature: 0.8, calibrated_on: { dataset: 'x.jsonl' } };
    const folder = await openModelFolder(folderWith(manifest));
    expect(folder.manifest).toEqual(manifest);
  });

  it('every assay.json the tools wrote here loads', () => {
    const dirs = readdirSync(GENERATED_DIR).filter((d) => {
      try {
        readFileSync(join(GENERATED_DIR, d, 'assay.json'));
        return true;
      } catch {
        return false;
      }
    });
    expect(dirs.length).toBeGreaterThan(0);
    return Promise.all(
      dirs.map(async (d) => {
        const dir = folderWith(readFileSync(join(GENERATED_DIR, d, 'assay.json'), 'utf8'));
        await expect(openModelFolder(dir), d).resolves.toBeDefined();
      }),
    );
  });

  it('the error crosses the engine thread intact', async () => {
    const dir = folderWith({ option_rotations: 0 });
    const error = await loadEvaluator({ modelDir: dir, threads: 1 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(ModelLoadError);
    expect(error!.message).toBe(`${dir}/assay.json: option_rotations: expected a whole number ≥ 1`);
  });
});

// Trained weights for the generator (src/model-files/synth/weights.ts): the committed file loads, and a
// file that is not what the graph needs is refused with a message that names the problem.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureSyntheticModels } from '../../src/commands/models-synth.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { synthesize, weightsDigest } from '../../src/model-files/synth/folder.js';
import { readWeights, WeightsError } from '../../src/model-files/synth/weights.js';

const WEIGHTS = 'models/trained/tiny-tasks.safetensors';

/** The float initializers of an ONNX file. */
function initializers(file: string): Map<string, Float32Array> {
  const m = onnxProto.onnx.ModelProto.decode(readFileSync(file));
  const out = new Map<string, Float32Array>();
  for (const t of m.graph?.initializer ?? []) {
    if (t.dataType !== 1 || !t.rawData) continue;
    const copy = new Float32Array(t.rawData.byteLength / 4);
    new Uint8Array(copy.buffer).set(t.rawData);
    out.set(t.name ?? '', copy);
  }
  return out;
}

/** The tensor names and shapes of a safetensors file's header. */
function header(file: string): Record<string, { dtype: string; shape: number[] }> {
  const bytes = readFileSync(file);
  const h = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[] }
  >;
  delete h.__metadata__;
  return h;
}

/** A safetensors file of the given tensors (F32 or I32). */
function safetensors(tensors: Record<string, { dtype: 'F32' | 'I32'; shape: number[]; values: number[] }>): Buffer {
  const header: Record<string, unknown> = { __metadata__: { task: 'test' } };
  const blobs: Buffer[] = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const buf = Buffer.from((t.dtype === 'F32' ? Float32Array.from(t.values) : Int32Array.from(t.values)).buffer);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + buf.length] };
    blobs.push(buf);
    offset += buf.length;
  }
  const h = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h, ...blobs]);
}

const temps: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'assay-weights-'));
  temps.push(dir);
  return dir;
};
afterAll(() => temps.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('trained weights', () => {
  it('the committed tiny-tasks weights hold every tensor of the tiny shape, the embedding as its trained rows', () => {
    const w = readWeights(WEIGHTS);
    const embed = w.get('model.embed_tokens.weight', [151936, 64]);
    const ids = new Set<number>();
    for (let v = 0; v < 151936; v++) if (embed.subarray(v * 64, (v + 1) * 64).some((x) => x !== 0)) ids.add(v);
    expect(ids.size).toBeGreaterThan(100);
    expect(ids.size).toBeLessThan(2000); // only the task's tokens were trained; every other row is zero
    expect(ids.has(9454) && ids.has(2753)).toBe(true); // "Yes", "No"
    expect(w.get('model.layers.1.mlp.down_proj.weight', [128, 64])).toHaveLength(128 * 64);
    expect(JSON.parse(w.metadata.heldout_accuracy!)).toMatchObject({ noul: expect.any(Number) as number });
  });

  it("a folder written from them holds them: every fp32 initializer is the file's tensor, every untrained embedding row zero", () => {
    const dir = join(tempDir(), 'fp32');
    const made = synthesize({ shape: 'tiny', dtype: 'fp32', weights: WEIGHTS, out: dir });
    const manifest = JSON.parse(readFileSync(join(dir, 'assay.json'), 'utf8'));
    expect(manifest).toMatchObject({
      synthetic: false,
      init: 'trained (tiny-tasks.safetensors)',
      trained: { weights: 'tiny-tasks.safetensors', sha256: weightsDigest(WEIGHTS) },
    });
    expect(manifest.warning).toBeUndefined();
    const graph = initializers(made.modelFile);
    const w = readWeights(WEIGHTS);
    const tensors = Object.entries(header(WEIGHTS)).filter(([name]) => !name.startsWith('model.embed_tokens.'));
    expect(tensors).toHaveLength(1 + 2 * 12);
    const bytes = (a: Float32Array | undefined) =>
      a ? Buffer.from(a.buffer, a.byteOffset, a.byteLength) : Buffer.alloc(0);
    for (const [name, { shape }] of tensors)
      expect(bytes(graph.get(name)).equals(bytes(w.get(name, shape))), name).toBe(true);
    const embed = graph.get('model.embed_tokens.weight')!;
    expect(bytes(embed).equals(bytes(w.get('model.embed_tokens.weight', [151936, 64])))).toBe(true);
    const rows = header(WEIGHTS)['model.embed_tokens.ids']!.shape[0]!;
    let nonzero = 0;
    for (let v = 0; v < 151936; v++) if (embed.subarray(v * 64, (v + 1) * 64).some((x) => x !== 0)) nonzero++;
    expect(nonzero).toBe(rows);
  });

  it("assay models synth writes a registry entry's folder from its weights, keeps it, and rewrites it when the weights change", async () => {
    const root = tempDir();
    copyFileSync(WEIGHTS, join(root, 'w.safetensors'));
    const registry = checkRegistry(
      {
        default: 'trained',
        models: {
          trained: {
            path: 'gen/trained',
            synthetic: { shape: 'tiny', dtype: 'int8', weights: 'w.safetensors' },
            description: 'trained',
            release_date: '2026-11-22',
          },
        },
        aliases: {},
      },
      join(root, 'registry.json'),
    );
    const log: string[] = [];
    expect(await ensureSyntheticModels(registry, (l) => log.push(l))).toEqual(['trained']);
    const manifest = () => JSON.parse(readFileSync(join(root, 'gen/trained/assay.json'), 'utf8'));
    expect(manifest()).toMatchObject({ synthetic: false, dtype: 'int8', trained: { sha256: weightsDigest(WEIGHTS) } });
    expect(await ensureSyntheticModels(registry, (l) => log.push(l))).toEqual([]);
    // Other weights under the same name (one float changed): the folder is stale.
    const bytes = readFileSync(WEIGHTS);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    writeFileSync(join(root, 'w.safetensors'), bytes);
    expect(await ensureSyntheticModels(registry, (l) => log.push(l))).toEqual(['trained']);
    expect(log.at(-1)).toMatch(/stale/);
    expect(manifest().trained.sha256).toBe(weightsDigest(join(root, 'w.safetensors')));
    expect(() =>
      checkRegistry(
        {
          default: 'x',
          models: {
            x: {
              path: 'p',
              synthetic: { shape: 'tiny', dtype: 'fp32', weights: 7 },
              description: '',
              release_date: '2026-11-22',
            },
          },
          aliases: {},
        },
        join(root, 'r.json'),
      ),
    ).toThrow(/synthetic\.weights: expected a path to a safetensors file/);
  });

  it('refuses a missing tensor, a wrong shape, a row outside the vocabulary and a file that is not safetensors', () => {
    const dir = tempDir();
    const file = join(dir, 'w.safetensors');
    writeFileSync(
      file,
      safetensors({
        'model.norm.weight': { dtype: 'F32', shape: [4], values: [1, 1, 1, 1] },
        'model.embed_tokens.ids': { dtype: 'I32', shape: [1], values: [99] },
        'model.embed_tokens.rows': { dtype: 'F32', shape: [1, 4], values: [1, 2, 3, 4] },
      }),
    );
    const w = readWeights(file);
    expect(() => w.get('model.layers.0.mlp.up_proj.weight', [4, 8])).toThrow(
      /no tensor model.layers.0.mlp.up_proj.weight/,
    );
    expect(() => w.get('model.norm.weight', [8])).toThrow(/model.norm.weight is \[4\], expected \[8\]/);
    expect(() => w.get('model.embed_tokens.weight', [10, 4])).toThrow(/token 99 is outside the vocabulary of 10/);
    expect(Array.from(w.get('model.embed_tokens.weight', [100, 4]).subarray(99 * 4))).toEqual([1, 2, 3, 4]);
    writeFileSync(file, 'not a model');
    expect(() => readWeights(file)).toThrow(WeightsError);
    // The generator stops at the first tensor it lacks, naming it.
    writeFileSync(file, safetensors({ 'model.norm.weight': { dtype: 'F32', shape: [64], values: Array(64).fill(1) } }));
    expect(() => synthesize({ shape: 'tiny', dtype: 'fp32', weights: file, out: join(dir, 'model') })).toThrow(
      /no tensor model\.(embed_tokens|layers\.0)/,
    );
  });
});

// Trained weights for the generator (src/tools/synth/weights.ts): the committed file loads, and a
// file that is not what the graph needs is refused with a message that names the problem.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { synthesize } from '../../src/tools/synth/folder.js';
import { readWeights, WeightsError } from '../../src/tools/synth/weights.js';

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

describe('trained weights', () => {
  it('the committed tiny-tasks weights hold every tensor of the tiny shape, the embedding as its trained rows', () => {
    const w = readWeights('models/trained/tiny-tasks.safetensors');
    const embed = w.get('model.embed_tokens.weight', [151936, 64]);
    const ids = new Set<number>();
    for (let v = 0; v < 151936; v++) if (embed.subarray(v * 64, (v + 1) * 64).some((x) => x !== 0)) ids.add(v);
    expect(ids.size).toBeGreaterThan(100);
    expect(ids.size).toBeLessThan(2000); // only the task's tokens were trained; every other row is zero
    expect(ids.has(9454) && ids.has(2753)).toBe(true); // "Yes", "No"
    expect(w.get('model.layers.1.mlp.down_proj.weight', [128, 64])).toHaveLength(128 * 64);
    expect(JSON.parse(w.metadata.heldout_accuracy!)).toMatchObject({ noul: expect.any(Number) as number });
  });

  it('refuses a missing tensor, a wrong shape, a row outside the vocabulary and a file that is not safetensors', () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-weights-'));
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
    expect(() => w.get('model.layers.0.mlp.up_proj.weight', [4, 8])).toThrow(/no tensor model.layers.0.mlp.up_proj.weight/);
    expect(() => w.get('model.norm.weight', [8])).toThrow(/model.norm.weight is \[4\], expected \[8\]/);
    expect(() => w.get('model.embed_tokens.weight', [10, 4])).toThrow(/token 99 is outside the vocabulary of 10/);
    expect(Array.from(w.get('model.embed_tokens.weight', [100, 4]).subarray(99 * 4))).toEqual([1, 2, 3, 4]);
    writeFileSync(file, 'not a model');
    expect(() => readWeights(file)).toThrow(WeightsError);
    // The generator stops at the first tensor it lacks, naming it.
    writeFileSync(file, safetensors({ 'model.norm.weight': { dtype: 'F32', shape: [64], values: Array(64).fill(1) } }));
    expect(() => synthesize({ shape: 'tiny', dtype: 'fp32', weights: file, out: join(dir, 'model') })).toThrow(/no tensor model\.(embed_tokens|layers\.0)/);
  });
});

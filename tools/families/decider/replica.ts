// The decider-labels replica (development only, never packed): an ordinary causal-LM export, as a
// decider folder is (docs/families/decider-labels.md): the project's tiny Qwen2-shaped decoder
// (models/shapes.json `tiny`, the Qwen3 tokenizer) written by the synthetic model generator from a
// weights file in the trained weights' layout (tools/train/train.py, whose independent torch
// forward is the reference): seeded random weights, with an embedding row for every token the
// goldens' rows hold and every label of the table (all other rows exactly zero, as the generator
// writes them), so each label's logit at a slot depends on the whole row. Plus the family's files:
// decision.json (layout decider-labels-v1, no label table: computed from the tokenizer) and
// calibration.json (the [T, 1, T] format, T = 1.03 as decider-0.8b ships). Two graphs, as the
// decoder exports publish them: onnx/model.onnx (fp32) and onnx/model_quantized.onnx (int8, the
// engine's default variant). The weights file stays in the folder (weights.safetensors) for the reference. Written into
// models/generated/decider-replica/ on demand (tests call ensureDeciderReplica).
//
//   npx tsx tools/families/decider/replica.ts [DIR]
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureSynthModel, GENERATED_DIR } from '../../../src/internal.js';
import { ROOT, seeded } from '../kit/goldens-kit.js';

export const DECIDER_REPLICA_DIR = join(GENERATED_DIR, 'decider-replica');
/** The replica's weights file, in its folder (the reference forward reads it). */
export const DECIDER_WEIGHTS = join(DECIDER_REPLICA_DIR, 'weights.safetensors');
/** calibration.json's temperature: [t_choice, t_score, t_noul]. */
export const DECIDER_TEMPERATURE = [1.03, 1, 1.03] as const;
const SEED = 3803;

/** Every token id the goldens' rows hold (contexts, pieces, labels). */
function goldenTokenIds(): number[] {
  const file = join(ROOT, 'test', 'families', 'decider', 'goldens.json');
  const ids = new Set<number>();
  if (!existsSync(file)) return Array.from({ length: 256 }, (_, i) => i); // before the first goldens
  const g = JSON.parse(readFileSync(file, 'utf8')) as {
    results: Array<{ ctx?: number[]; rows?: Array<{ piece: number[]; labels: number[] }> }>;
  };
  for (const r of g.results) {
    for (const id of r.ctx ?? []) ids.add(id);
    for (const row of r.rows ?? []) for (const id of [...row.piece, ...row.labels]) ids.add(id);
  }
  return [...ids].sort((a, b) => a - b);
}

/** A safetensors file (F32 / I32 tensors), as tools/train/train.py writes one. */
function writeSafetensors(path: string, tensors: Array<[string, 'F32' | 'I32', number[], ArrayLike<number>]>): void {
  const header: Record<string, unknown> = {
    __metadata__: {
      format:
        'assay tiny-tasks weights: linear weights [in, out] (x @ W, as the ONNX graph); embedding rows only for the ids listed, every other row zero',
      shape: 'tiny',
      task: 'decider-labels replica (seeded random weights, tools/families/decider/replica.ts)',
    },
  };
  const blobs: Buffer[] = [];
  let offset = 0;
  for (const [name, dtype, shape, values] of tensors) {
    const data = Buffer.from(dtype === 'F32' ? Float32Array.from(values).buffer : Int32Array.from(values).buffer);
    header[name] = { dtype, shape, data_offsets: [offset, offset + data.length] };
    blobs.push(data);
    offset += data.length;
  }
  let h = JSON.stringify(header);
  h += ' '.repeat((8 - (Buffer.byteLength(h) % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(Buffer.byteLength(h)));
  writeFileSync(path, Buffer.concat([size, Buffer.from(h), ...blobs]));
}

/** Seeded random weights of the tiny shape with embedding rows for `ids`. */
function writeReplicaWeights(path: string, ids: number[]): void {
  const shapes = JSON.parse(readFileSync(join(ROOT, 'models', 'shapes.json'), 'utf8')) as {
    tiny: { config: Record<string, number> };
  };
  const c = shapes.tiny.config;
  const [H, D, nH, kvH, I, L] = [
    c.hidden_size!,
    c.head_dim!,
    c.num_attention_heads!,
    c.num_key_value_heads!,
    c.intermediate_size!,
    c.num_hidden_layers!,
  ];
  const rand = seeded(SEED);
  // Roughly normal (sum of uniforms), scaled.
  const normal = (n: number, scale: number) =>
    Array.from({ length: n }, () => (rand() + rand() + rand() + rand() - 2) * Math.sqrt(3) * scale);
  const ones = (n: number) => Array.from({ length: n }, () => 1 + (rand() - 0.5) * 0.2);
  const tensors: Array<[string, 'F32' | 'I32', number[], ArrayLike<number>]> = [
    ['model.embed_tokens.ids', 'I32', [ids.length], ids],
    ['model.embed_tokens.rows', 'F32', [ids.length, H], normal(ids.length * H, 0.5)],
    ['model.norm.weight', 'F32', [H], ones(H)],
  ];
  for (let i = 0; i < L; i++) {
    const p = `model.layers.${i}`;
    const lin = (name: string, a: number, b: number): [string, 'F32', number[], number[]] => [
      `${p}.${name}`,
      'F32',
      [a, b],
      normal(a * b, 1 / Math.sqrt(a)),
    ];
    tensors.push(
      [`${p}.input_layernorm.weight`, 'F32', [H], ones(H)],
      [`${p}.post_attention_layernorm.weight`, 'F32', [H], ones(H)],
      lin('self_attn.q_proj.weight', H, nH * D),
      lin('self_attn.k_proj.weight', H, kvH * D),
      lin('self_attn.v_proj.weight', H, kvH * D),
      [`${p}.self_attn.q_proj.bias`, 'F32', [nH * D], normal(nH * D, 0.1)],
      [`${p}.self_attn.k_proj.bias`, 'F32', [kvH * D], normal(kvH * D, 0.1)],
      [`${p}.self_attn.v_proj.bias`, 'F32', [kvH * D], normal(kvH * D, 0.1)],
      lin('self_attn.o_proj.weight', nH * D, H),
      lin('mlp.gate_proj.weight', H, I),
      lin('mlp.up_proj.weight', H, I),
      lin('mlp.down_proj.weight', I, H),
    );
  }
  writeSafetensors(path, tensors);
}

/** The replica folder (generated when missing or stale). */
export async function ensureDeciderReplica(dir = DECIDER_REPLICA_DIR): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'assay-decider-'));
  const weights = join(work, 'weights.safetensors');
  writeReplicaWeights(weights, goldenTokenIds());
  const out = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', weights, out: dir });
  if (!existsSync(join(out, 'weights.safetensors'))) copyFileSync(weights, join(out, 'weights.safetensors'));
  // The int8 graph of the same weights beside the fp32 one (the decoder engine's default variant).
  const int8 = join(out, 'onnx', 'model_quantized.onnx');
  if (!existsSync(int8)) {
    const q = await ensureSynthModel({ shape: 'tiny', dtype: 'int8', weights, out: join(work, 'int8') });
    copyFileSync(join(q, 'onnx', 'model_quantized.onnx'), int8);
  }
  rmSync(work, { recursive: true, force: true });
  // The weights are random: the folder says so (assay.json "synthetic"), so the server's and `assay
  // eval`'s warnings about meaningless answers apply, as for every other replica.
  const manifest = join(out, 'assay.json');
  const marker = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, unknown>;
  if (marker.synthetic !== true)
    writeFileSync(manifest, `${JSON.stringify({ ...marker, synthetic: true }, null, 2)}\n`);
  const decision = join(out, 'decision.json');
  if (!existsSync(decision)) {
    writeFileSync(join(out, 'calibration.json'), `${JSON.stringify({ temperature: DECIDER_TEMPERATURE })}\n`);
    writeFileSync(decision, `${JSON.stringify({ layout: 'decider-labels-v1' }, null, 2)}\n`);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  console.log(await ensureDeciderReplica(process.argv[2] ? resolve(process.argv[2]) : undefined));

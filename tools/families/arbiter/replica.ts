// The synthetic replica of an Arbiter model (`arbiter-fixed`, development only, never packed):
// causal-replica-kit.ts's tiny trunk with the fixed 24-slot head, random weights, in the folder layout
// the peer serves the published model in (ollaya-dev/ollaya:docs/families/arbiter.md):
//
//   model.onnx + model.onnx_data   input_ids i64[rows, seq], last_pos i64[rows] → scores f32[rows, 24]
//                                  (fp32 weights here; the Decision replica carries the BF16 casts)
//   tokenizer.json, tokenizer_config.json   the Gemma-style stand-in (gemma-tokenizer.ts), <pad> 0
//   decision.json                  layout arbiter-fixed-v1, pad_token_id 0, max_len 2048 (the replica's own cut)
//   calibration.json               [1, 1, 1] (Arbiter v3.3 ships no fitted temperature)
//   weights.safetensors            the same weights, for tools/families/kit/endpoint_forward.py
//   assay.json                     synthetic; the shape the numpy forward reads
// The head: scores = W h[last_pos] + b, Linear(hidden, 24) as published. The answers are MEANINGLESS.
//
// At the published bases' sizes (ARBITER_REPLICA_SIZES: `qwen2.5-0.5b`, `qwen3.5-0.8b`, the trunk as
// Kev's sized replicas have it, BF16 weights with a Cast each as the Decision replica stores them),
// for measuring: models/generated/arbiter-replica-<size>, written on demand by the bench, without
// weights.safetensors and without a max_len of its own.
//
//   npx tsx tools/families/arbiter/replica.ts DIR
//   npx tsx tools/families/arbiter/replica.ts --size SIZE
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type CausalHead,
  type CausalShape,
  type CausalSize,
  endpointStorage,
  ensureSizedFolder,
  sizedShapes,
  writeReplicaGraph,
} from '../kit/causal-replica-kit.js';
import { gemmaTestTokenizer, gemmaTestVocab } from './gemma-tokenizer.js';
import * as kit from '../kit/replica-kit.js';
import { writeTestTokenizer } from '../kit/tokenizer-kit.js';

export const ARBITER_REPLICA_VERSION = 1;
export const ARBITER_REPLICA_SEED = 59;
/** The replica folder's row length (decision.json max_len). */
export const ARBITER_MAX_LEN = 2048;

export const ARBITER_SHAPE: CausalShape = {
  hidden: 32,
  heads: 2,
  intermediate: 64,
  layers: 2,
  vocab: gemmaTestVocab(),
  eps: 1e-6,
};

/** The published bases' sizes (causal-replica-kit.ts's CAUSAL_BASE_SIZES; the stand-in tokenizer's vocabulary), for measuring. */
export const ARBITER_REPLICA_SIZES = sizedShapes(ARBITER_SHAPE);

/** The fixed head: Linear(hidden, 24) of the hidden state at last_pos. */
export function slotsHead(H: number): CausalHead {
  return {
    positions: [{ name: 'last_pos', perRow: 1 }],
    specs: new Map([
      ['head.weight', { shape: [24, H], std: 3 / Math.sqrt(H), mean: 0 }],
      ['head.bias', { shape: [24], std: 0.1, mean: 0 }],
    ]),
    build(n, hidden, pos) {
      const scores = kit.linear(n, n.gatherND(hidden, pos.last_pos!, 1), 'head.weight', 'head.bias');
      n.output('scores', ['rows', 24], scores);
    },
  };
}

export function arbiterReplicaDir(size?: CausalSize): string {
  const name = size ? `arbiter-replica-${size}` : 'arbiter-replica';
  return fileURLToPath(new URL(`../../../models/generated/${name}/`, import.meta.url));
}

/**
 * Writes the replica folder into `out` (created); at a base's `size`, BF16 weights (as the published
 * export stores them) drawn as the graph asks for them, no row cut of its own and no weights.safetensors.
 */
export function writeArbiterReplica(out: string, seed = ARBITER_REPLICA_SEED, size?: CausalSize): void {
  mkdirSync(out, { recursive: true });
  const shape = size ? ARBITER_REPLICA_SIZES[size] : ARBITER_SHAPE;
  const meta = {
    producer: 'assay-causal-replica',
    docString: 'Arbiter replica: random weights, MEANINGLESS answers.',
    safetensors: { format: 'pt', seed: String(seed) },
  };
  const head = slotsHead(shape.hidden);
  writeReplicaGraph(out, { shape, head, seed, storage: endpointStorage(!!size), lazy: !!size }, meta);
  writeTestTokenizer(out, gemmaTestTokenizer());
  const cut = size ? {} : { max_len: ARBITER_MAX_LEN };
  kit.writeJson(join(out, 'decision.json'), { layout: 'arbiter-fixed-v1', pad_token_id: 0, ...cut });
  kit.writeJson(join(out, 'calibration.json'), { temperature: [1, 1, 1] });
  kit.writeJson(join(out, 'assay.json'), {
    synthetic: true,
    family: 'arbiter-fixed',
    generator: 'arbiter-replica',
    generator_version: ARBITER_REPLICA_VERSION,
    seed,
    architecture: { ...shape, head: 'slots' },
    warning: 'random weights: the answers are MEANINGLESS',
    ...(size ? { size } : {}),
  });
}

export function ensureArbiterReplica(dir = arbiterReplicaDir(), seed = ARBITER_REPLICA_SEED): string {
  return kit.ensureFolder(dir, ARBITER_REPLICA_VERSION, seed, (out) => writeArbiterReplica(out, seed));
}

/** The replica at a published base's size (models/generated/arbiter-replica-<size>), written once. */
export function ensureArbiterReplicaSize(size: CausalSize, log?: (line: string) => void): string {
  const stamp = { version: ARBITER_REPLICA_VERSION, seed: ARBITER_REPLICA_SEED, size, what: 'Arbiter' };
  return ensureSizedFolder(arbiterReplicaDir(size), stamp, (out) => writeArbiterReplica(out, stamp.seed, size), log);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  if (dir === '--size') {
    const size = process.argv[3] as CausalSize;
    if (!(size in ARBITER_REPLICA_SIZES)) throw new Error(`unknown size ${size}`);
    console.log(ensureArbiterReplicaSize(size, console.error));
    process.exit(0);
  }
  if (!dir) {
    console.error('usage: npx tsx tools/families/arbiter/replica.ts DIR');
    process.exit(2);
  }
  writeArbiterReplica(resolve(dir));
  console.log(`wrote the Arbiter replica to ${dir}`);
}

// The synthetic replica of an Arbiter model (`arbiter-fixed`, development only, never packed):
// causal-replica-kit.ts's tiny trunk with the fixed 24-slot head, random weights, in the folder layout
// the peer serves the published model in (ollaya-dev/ollaya:docs/families/arbiter.md):
//
//   model.onnx + model.onnx_data   input_ids i64[rows, seq], last_pos i64[rows] → scores f32[rows, 24]
//                                  (fp32 weights here; the Decision replica carries the BF16 casts)
//   tokenizer.json, tokenizer_config.json   the Gemma-style stand-in (gemma-tokenizer.ts), <pad> 0
//   decision.json                  layout arbiter-fixed-v1, pad_token_id 0, max_len 2048 (the replica's own cut)
//   calibration.json               [1, 1, 1] (Arbiter v3.3 ships no fitted temperature)
//   weights.safetensors            the same weights, for tools/reference/endpoint_forward.py
//   assay.json                     synthetic; the shape the numpy forward reads
// The head: scores = W h[last_pos] + b, Linear(hidden, 24) as published. The answers are MEANINGLESS.
//
//   npx tsx tools/families/arbiter-replica.ts DIR
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type CausalHead,
  type CausalShape,
  type CausalSpec,
  drawWeights,
  endpointStorage,
  storedBf16,
  trunkSpecs,
  writeCausalGraph,
} from './causal-replica-kit.js';
import { gemmaTestTokenizer, gemmaTestVocab } from './gemma-tokenizer.js';
import * as kit from './replica-kit.js';
import { writeTestTokenizer } from './tokenizer-kit.js';

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

/** The fixed head: Linear(hidden, 24) of the hidden state at last_pos. */
export function slotsHead(H: number): CausalHead {
  return {
    positions: [{ name: 'last_pos', perRow: 1 }],
    specs: new Map<string, CausalSpec>([
      ['head.weight', { shape: [24, H], std: 3 / Math.sqrt(H), mean: 0 }],
      ['head.bias', { shape: [24], std: 0.1, mean: 0 }],
    ]),
    build(n, hidden, pos) {
      const scores = kit.linear(n, n.gatherND(hidden, pos.last_pos!, 1), 'head.weight', 'head.bias');
      n.output('scores', ['rows', 24], scores);
    },
  };
}

export function arbiterReplicaDir(): string {
  return fileURLToPath(new URL('../../models/generated/arbiter-replica/', import.meta.url));
}

export function writeArbiterReplica(out: string, seed = ARBITER_REPLICA_SEED): void {
  mkdirSync(out, { recursive: true });
  const storage = endpointStorage(false);
  const trunk = trunkSpecs(ARBITER_SHAPE, storage);
  const head = slotsHead(ARBITER_SHAPE.hidden);
  const w = drawWeights(new Map([...trunk, ...head.specs]), seed, storedBf16(storage, trunk));
  const meta = { producer: 'assay-causal-replica', docString: 'Arbiter replica: random weights, MEANINGLESS answers.' };
  writeCausalGraph(out, ARBITER_SHAPE, head, w, meta, storage);
  writeTestTokenizer(out, gemmaTestTokenizer());
  kit.writeJson(join(out, 'decision.json'), { layout: 'arbiter-fixed-v1', pad_token_id: 0, max_len: ARBITER_MAX_LEN });
  kit.writeJson(join(out, 'calibration.json'), { temperature: [1, 1, 1] });
  kit.writeSafetensors(join(out, 'weights.safetensors'), w, w, { format: 'pt', seed: String(seed) });
  kit.writeJson(join(out, 'assay.json'), {
    synthetic: true,
    family: 'arbiter-fixed',
    generator: 'arbiter-replica',
    generator_version: ARBITER_REPLICA_VERSION,
    seed,
    architecture: { ...ARBITER_SHAPE, head: 'slots' },
    warning: 'random weights: the answers are MEANINGLESS',
  });
}

export function ensureArbiterReplica(dir = arbiterReplicaDir(), seed = ARBITER_REPLICA_SEED): string {
  return kit.ensureFolder(dir, ARBITER_REPLICA_VERSION, seed, (out) => writeArbiterReplica(out, seed));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: npx tsx tools/families/arbiter-replica.ts DIR');
    process.exit(2);
  }
  writeArbiterReplica(resolve(dir));
  console.log(`wrote the Arbiter replica to ${dir}`);
}

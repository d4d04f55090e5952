// A synthetic replica of a Kev decision model (`kev-pointer`, development only, never packed): a
// tiny causal transformer (causal-replica-kit.ts) with Kev's pointer head, random weights, in the
// layout of the published ONNX export (the peer's docs/families/kev.md), so the family can be built
// and tested offline. The answers are MEANINGLESS; the interface is real:
//   model.onnx + model.onnx_data   input_ids i64[rows, seq] (no attention mask: causal in-graph),
//                                  decide_pos i64[rows], opt_pos i64[rows, k] → scores f32[rows, k]
//                                  (no temperature applied); matrices BF16 in external data, Cast
//   tokenizer.json, tokenizer_config.json   the Qwen3.5-id tokenizer (qwen35-tokenizer.ts): box,
//                                  fim and pad tokens at Qwen3.5's ids
//   decision.json                  layout kev-pointer-v1, the delimiter ids, the row limits
//   calibration.json               temperature [choice, score, noul]: 2.4, 1.8, 3.0 here (Kev ships
//                                  one for all types; distinct values make a mix-up visible)
//   config.json                    the replica's shape (what tools/families/kit/causal_forward.py reads)
//   weights.safetensors            the same weights in fp32 (exactly the BF16 values), PyTorch names,
//                                  for the numpy reference (not part of a published folder)
//   assay.json                     synthetic, generator version and seed
// The head, as Kev's head.pt describes it: q = Linear(hidden → 256) of the hidden state at
// decide_pos, k = Linear(hidden → 256) of each option's at opt_pos; score_j = k_j · q / 16.
//
// Sizes (KEV_REPLICA_SIZES), for measuring: the same layout at the published bases' cost per token,
// `qwen2.5-0.5b` and `qwen3.5-0.8b` (models/generated/kev-replica-<size>, written on demand, without
// weights.safetensors: no reference reads them). The kit's trunk is not Qwen's (learned positions,
// LayerNorm and GELU, every layer full attention, a 2-matrix MLP): the hidden size, layers and heads
// are the base's, and the MLP's width is 1.5 × the base's SwiGLU width, so that its two matrices
// hold the three matrices' parameters; the vocabulary is the Qwen3.5-id tokenizer's.
//
//   npx tsx tools/families/kev/replica.ts [DIR]        writes the tiny folder (default models/generated/kev-replica)
//   npx tsx tools/families/kev/replica.ts --size SIZE  writes models/generated/kev-replica-SIZE
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type CausalHead,
  type CausalShape,
  type CausalSize,
  type CausalSpec,
  causalConfig,
  ensureSizedFolder,
  KEV_STORAGE,
  sizedShapes,
  writeJsonFile,
  writeReplicaGraph,
} from '../kit/causal-replica-kit.js';
import { ensureFolder } from '../kit/replica-kit.js';
import { QWEN35_IDS, QWEN35_VOCAB, writeQwen35Tokenizer } from '../kit/qwen35-tokenizer.js';

/** Bumped when the graph, the weights or the folder's files change: a cached folder is rewritten. */
export const KEV_REPLICA_VERSION = 3;
export const KEV_REPLICA_SEED = 38;

/** Kev's pointer head width (head.pt: two Linear(hidden → 256)); scores are divided by √256 = 16. */
export const KEV_HEAD_DIM = 256;

/** The replica's temperatures, [choice, score, noul] (calibration.json). */
export const KEV_REPLICA_TEMPERATURES = [2.4, 1.8, 3.0] as const;

/** Rows of at most 16,384 tokens (a state at Kev's 8,192 and a branch of 8,192): 16,384 positions. */
export const KEV_REPLICA_SHAPE: CausalShape = {
  vocab: QWEN35_VOCAB,
  positions: 16_384,
  hidden: 32,
  heads: 2,
  intermediate: 64,
  layers: 2,
  eps: 1e-5,
};

/** The published bases' sizes (causal-replica-kit.ts's CAUSAL_BASE_SIZES). */
export const KEV_REPLICA_SIZES = sizedShapes(KEV_REPLICA_SHAPE);
export type KevReplicaSize = CausalSize;

export function kevReplicaDir(size?: KevReplicaSize): string {
  if (size) return fileURLToPath(new URL(`../../../models/generated/kev-replica-${size}/`, import.meta.url));

  return fileURLToPath(new URL('../../../models/generated/kev-replica/', import.meta.url));
}

/** The pointer head: its positions, weights and scores. */
export function kevPointerHead(hidden: number): CausalHead {
  const specs = new Map<string, CausalSpec>();
  for (const which of ['q', 'k']) {
    specs.set(`head.${which}.weight`, { shape: [KEV_HEAD_DIM, hidden], std: 1 / Math.sqrt(hidden) });
    specs.set(`head.${which}.bias`, { shape: [KEV_HEAD_DIM], std: 0.1 });
  }
  return {
    positions: [
      { name: 'decide_pos', perRow: 1 },
      { name: 'opt_pos', perRow: 'k' },
    ],
    specs,
    build(n, hidden, pos) {
      const q = n.linear(n.gather(hidden, pos.decide_pos!, 1), 'head.q'); // [rows, 256]
      const k = n.linear(n.gather(hidden, pos.opt_pos!, 'k'), 'head.k'); // [rows, k, 256]
      n.output('scores', ['rows', 'k'], n.scaledDot(k, q, 1 / Math.sqrt(KEV_HEAD_DIM)));
    },
  };
}

/** decision.json as the replica writes it (the peer's layout id and delimiter names). */
export function kevDecision(): Record<string, unknown> {
  return {
    layout: 'kev-pointer-v1',
    special_tokens: {
      state: QWEN35_IDS.fimPrefix,
      question: QWEN35_IDS.fimMiddle,
      option_open: QWEN35_IDS.boxStart,
      option_close: QWEN35_IDS.boxEnd,
      decide: QWEN35_IDS.fimSuffix,
      pad: QWEN35_IDS.endoftext,
    },
    max_state_tokens: 8192,
    max_row_tokens: 16_384,
  };
}

function write(out: string, size?: KevReplicaSize): void {
  mkdirSync(out, { recursive: true });
  const shape = size ? KEV_REPLICA_SIZES[size] : KEV_REPLICA_SHAPE;
  const meta = {
    producer: 'assay-kev-replica',
    docString: 'Kev pointer replica: random weights, MEANINGLESS answers.',
    safetensors: { format: 'pt', note: "replica: the graph's BF16 values in fp32" },
  };
  const head = kevPointerHead(shape.hidden);
  writeReplicaGraph(out, { shape, head, seed: KEV_REPLICA_SEED, storage: KEV_STORAGE, lazy: !!size }, meta);
  writeQwen35Tokenizer(out);
  writeJsonFile(join(out, 'decision.json'), kevDecision());
  writeJsonFile(join(out, 'calibration.json'), { temperature: [...KEV_REPLICA_TEMPERATURES] });
  writeJsonFile(join(out, 'config.json'), causalConfig(shape, { head: { type: 'pointer', dim: KEV_HEAD_DIM } }));
  writeJsonFile(join(out, 'assay.json'), {
    synthetic: true,
    family: 'kev-pointer',
    generator: 'tools/families/kev/replica.ts',
    generator_version: KEV_REPLICA_VERSION,
    seed: KEV_REPLICA_SEED,
    ...(size ? { size } : {}),
  });
}

/** The replica's folder, written once and reused while this version and seed are current. */
export function ensureKevReplica(dir = kevReplicaDir()): string {
  return ensureFolder(dir, KEV_REPLICA_VERSION, KEV_REPLICA_SEED, write);
}

/** The replica at a published base's size (models/generated/kev-replica-<size>), written once. */
export function ensureKevReplicaSize(size: KevReplicaSize, log?: (line: string) => void): string {
  const stamp = { version: KEV_REPLICA_VERSION, seed: KEV_REPLICA_SEED, size, what: 'Kev' };
  return ensureSizedFolder(kevReplicaDir(size), stamp, (out) => write(out, size), log);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const size = process.argv[2] === '--size' ? (process.argv[3] as KevReplicaSize) : undefined;
  if (size !== undefined && !(size in KEV_REPLICA_SIZES))
    throw new Error(`unknown size ${size}; known: ${Object.keys(KEV_REPLICA_SIZES).join(', ')}`);
  console.log(size ? ensureKevReplicaSize(size, console.error) : ensureKevReplica(process.argv[2]));
}

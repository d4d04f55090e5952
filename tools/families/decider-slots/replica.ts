// A synthetic replica of the decider as exported with a slot head (`decider-slots`, development
// only, never packed): a tiny causal transformer (causal-replica-kit.ts) whose head is the tied
// embedding read at the slot, random weights, in the layout of the published ONNX export (the
// peer's docs/families/decider.md, "ONNX contract"). The answers are MEANINGLESS; the interface
// is real:
//   model.onnx + model.onnx_data   input_ids i64[rows, seq] (no attention mask: causal in-graph),
//                                  slot_pos i64[rows] → label_logits f32[rows, 255]
//                                  = h[slot] · E[label_ids]ᵀ, E the (tied) token embedding;
//                                  matrices BF16 in external data, Cast to fp32 in the graph
//   tokenizer.json, tokenizer_config.json   the Qwen3.5-id tokenizer (qwen35-tokenizer.ts)
//   decision.json                  layout decider-slots-v1, the 255-label table (labels.strings /
//                                  labels.ids: A..Z, then the single-token AA..), the pad id, the
//                                  longest row the replica's position table takes
//   calibration.json               temperature [T, 1, T] (T = 1.03, decider-0.8b's)
//   config.json                    the replica's shape (what the numpy forward reads)
//   weights.safetensors            the same weights in fp32 (exactly the BF16 values), for the numpy
//                                  reference (not part of a published folder)
//   assay.json                     synthetic, generator version and seed
//
// At the published bases' sizes (SLOTS_REPLICA_SIZES: `qwen2.5-0.5b`, `qwen3.5-0.8b`, as Kev's sized
// replicas), for measuring: models/generated/decider-slots-replica-<size>, written on demand by the
// bench, without weights.safetensors.
//
//   npx tsx tools/families/decider-slots/replica.ts [DIR]   (default models/generated/decider-slots-replica)
//   npx tsx tools/families/decider-slots/replica.ts --size SIZE
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import {
  type CausalHead,
  type CausalShape,
  type CausalSize,
  causalConfig,
  ensureSizedFolder,
  KEV_STORAGE,
  sizedShapes,
  writeJsonFile,
  writeReplicaGraph,
} from '../kit/causal-replica-kit.js';
import { ensureFolder } from '../kit/replica-kit.js';
import { QWEN35_IDS, QWEN35_VOCAB, qwen35Tokenizer, writeQwen35Tokenizer } from '../kit/qwen35-tokenizer.js';

/** Bumped when the graph, the weights or the folder's files change: a cached folder is rewritten. */
export const SLOTS_REPLICA_VERSION = 1;
export const SLOTS_REPLICA_SEED = 3838;
/** calibration.json's temperature: [T, 1, T] as decider-0.8b ships it. */
export const SLOTS_TEMPERATURE = [1.03, 1, 1.03] as const;
/** The wide label table's size. */
export const SLOTS_LABELS = 255;

/** Rows up to the 32,768-token context and a 255-option question: 36,864 positions (576 × 64). */
export const SLOTS_REPLICA_SHAPE: Required<CausalShape> = {
  vocab: QWEN35_VOCAB,
  positions: 36_864,
  hidden: 32,
  heads: 2,
  intermediate: 64,
  layers: 2,
  eps: 1e-5,
};

/** The published bases' sizes (causal-replica-kit.ts's CAUSAL_BASE_SIZES), for measuring. */
export const SLOTS_REPLICA_SIZES = sizedShapes(SLOTS_REPLICA_SHAPE);

export function slotsReplicaDir(size?: CausalSize): string {
  const name = size ? `decider-slots-replica-${size}` : 'decider-slots-replica';
  return fileURLToPath(new URL(`../../../models/generated/${name}/`, import.meta.url));
}

/**
 * The label table as the exporter stores it: A..Z, then the two-letter uppercase strings the
 * tokenizer writes as one token (text as data: no added tokens), the first 255 in all.
 */
export function slotsLabelTable(): { strings: string[]; ids: number[] } {
  const t = qwen35Tokenizer();
  const tok = new Tokenizer({ ...t.tokenizer, added_tokens: [] }, t.config);
  const az = Array.from({ length: 26 }, (_, i) => String.fromCharCode(65 + i));
  const strings: string[] = [];
  const ids: number[] = [];
  for (const s of [...az, ...az.flatMap((a) => az.map((b) => a + b))]) {
    const got = tok.encode(s, { add_special_tokens: false }).ids;
    if (got.length !== 1 || strings.length === SLOTS_LABELS) continue;
    strings.push(s);
    ids.push(got[0]!);
  }
  return { strings, ids };
}

/** The slot head: the final hidden state at slot_pos times the tied embedding rows of the labels. */
export function slotHead(labelIds: readonly number[]): CausalHead {
  return {
    positions: [{ name: 'slot_pos', perRow: 1 }],
    specs: new Map(),
    build(n, hidden, pos) {
      const { g } = n;
      const h = n.gather(hidden, pos.slot_pos!, 1); // [rows, H]
      const rows = g.op(
        'Gather',
        [n.weight('model.embed_tokens.weight'), g.constI64([...labelIds], [labelIds.length])],
        {
          axis: { i: 0 },
        },
      ); // [255, H]
      const logits = g.op('MatMul', [h, g.op('Transpose', [rows], { perm: { ints: [1, 0] } })]);
      n.output('label_logits', ['rows', SLOTS_LABELS], logits);
    },
  };
}

/** decision.json as the replica writes it. */
export function slotsDecision(labels = slotsLabelTable()): Record<string, unknown> {
  return {
    layout: 'decider-slots-v1',
    labels,
    isolated_row_temperature: SLOTS_TEMPERATURE[0],
    special_tokens: { pad: QWEN35_IDS.endoftext },
    max_row_tokens: SLOTS_REPLICA_SHAPE.positions,
  };
}

function write(out: string, size?: CausalSize): void {
  mkdirSync(out, { recursive: true });
  const shape = size ? SLOTS_REPLICA_SIZES[size] : SLOTS_REPLICA_SHAPE;
  const labels = slotsLabelTable();
  if (labels.ids.length !== SLOTS_LABELS) throw new Error(`only ${labels.ids.length} single-token labels`);
  const meta = {
    producer: 'assay-decider-slots-replica',
    docString: 'decider slot-head replica: random weights, MEANINGLESS answers.',
    safetensors: { format: 'pt', note: "replica: the graph's BF16 values in fp32" },
  };
  const r = { shape, head: slotHead(labels.ids), seed: SLOTS_REPLICA_SEED, storage: KEV_STORAGE, lazy: !!size };
  writeReplicaGraph(out, r, meta);
  writeQwen35Tokenizer(out);
  writeJsonFile(join(out, 'decision.json'), slotsDecision(labels));
  writeJsonFile(join(out, 'calibration.json'), { temperature: [...SLOTS_TEMPERATURE] });
  writeJsonFile(join(out, 'config.json'), causalConfig(shape, { head: { type: 'slots', tied: true } }));
  writeJsonFile(join(out, 'assay.json'), {
    synthetic: true,
    family: 'decider-slots',
    generator: 'tools/families/decider-slots/replica.ts',
    generator_version: SLOTS_REPLICA_VERSION,
    seed: SLOTS_REPLICA_SEED,
    ...(size ? { size } : {}),
  });
}

/** The replica's folder, written once and reused while this version and seed are current. */
export function ensureSlotsReplica(dir = slotsReplicaDir()): string {
  return ensureFolder(dir, SLOTS_REPLICA_VERSION, SLOTS_REPLICA_SEED, write);
}

/** The replica at a published base's size (models/generated/decider-slots-replica-<size>), written once. */
export function ensureSlotsReplicaSize(size: CausalSize, log?: (line: string) => void): string {
  const stamp = { version: SLOTS_REPLICA_VERSION, seed: SLOTS_REPLICA_SEED, size, what: 'decider slot-head' };
  return ensureSizedFolder(slotsReplicaDir(size), stamp, (out) => write(out, size), log);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const size = process.argv[2] === '--size' ? (process.argv[3] as CausalSize) : undefined;
  if (size !== undefined && !(size in SLOTS_REPLICA_SIZES)) throw new Error(`unknown size ${size}`);
  console.log(size ? ensureSlotsReplicaSize(size, console.error) : ensureSlotsReplica(process.argv[2]));
}

// The state read once, case by case, on one replica of each trunk kind and conv form (Kev on Qwen3;
// Kev on Qwen3.5, its conv padded by Conv then sliced; Decision on Qwen3.5, its conv after a Pad;
// Arbiter on Gemma 3, sliding windows of 32 and the mask from last_pos): rows of synthetic tokens,
// continued from a snapshot, against the same rows run whole on the export as published, within
// the bound of reuse.test.ts (1e-5 · (1 + max |y|): float32 evaluations of one function). Then the
// continuation graph broken on purpose (a position off by one, a conv tail off by one, the Scan not
// fed its state, a mask not shifted) must miss that bound by far, and the load-time probe must
// refuse it; and graphs the rewrite does not read must give a reason, not an answer.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topologicalOrder } from '../../../src/engine/model/graph-order.js';
import { decodeModel, encodeModel, type ModelProto } from '../../../src/engine/model/graph-rewrite.js';
import {
  RowReuse,
  rowReuseGraph,
  snapshotLength,
  type ReuseRow,
  type RowGraph,
} from '../../../src/engine/model/row-reuse/index.js';
import { PAST_LENGTH } from '../../../src/engine/model/row-reuse/names.js';
import { ensureKevReplica } from '../../../tools/families/kev/replica.js';
import {
  ensureTrunkReplicas,
  hasTorch,
  trunkConfig,
  type TrunkFamily,
  type TrunkKind,
} from '../../../tools/trunks/replicas.js';
import { apart, mutated, openReuse, padIdOf, testCache, wholeRows } from './reuse-helpers.js';
import { AttributeType, DataType } from '../../../src/common/index.js';

const torch = hasTorch('row reuse cases on the real-trunk replicas');
const REPLICAS: Array<[TrunkFamily, TrunkKind]> = [
  ['kev', 'qwen3'],
  ['kev', 'qwen35'],
  ['decision', 'qwen35'],
  ['arbiter', 'gemma3'],
];
/** reuse.test.ts's bound on a row's outputs, relative to their scale. */
const BOUND = 1e-5;

/** Seeded token ids below `vocab`. */
function tokens(n: number, seed: number, vocab: number): number[] {
  let x = seed * 2654435761;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) >>> 0;
    return x % vocab;
  });
}

describe.skipIf(!torch)('the state read once: the cases', () => {
  let dirs: string[] = [];
  const cacheDir = testCache();
  beforeAll(async () => {
    dirs = await ensureTrunkReplicas(REPLICAS.map(([family, trunk]) => ({ family, trunk })));
  }, 600_000);

  describe.each(REPLICAS.map(([f, t], i) => [f, t, i] as const))('%s on the %s trunk', (family, trunk, i) => {
    let reuse: RowReuse;
    let graph: RowGraph;
    let original: ort.InferenceSession;
    let pad: number;
    let vocab: number;
    beforeAll(async () => {
      ({ reuse, graph } = await openReuse(dirs[i]!, cacheDir));
      original = await ort.InferenceSession.create(join(dirs[i]!, 'model.onnx'), { intraOpNumThreads: 1 });
      pad = padIdOf(dirs[i]!);
      vocab = Math.min(graph.facts.vocab!, 5000);
    }, 120_000);
    afterAll(async () => {
      await reuse?.close();
      await original?.release();
    });

    /** Rows of one state (`state` tokens) and questions of `tails` tokens; positions in the questions (`last`: a row's last_pos / one-per-row position, from its end). */
    const rowsOf = (state: number, tails: number[], seed = 1, last = (n: number) => n - 1): ReuseRow[] => {
      const s = tokens(state, seed, vocab);
      return tails.map((tail, r) => {
        const ids = [...s, ...tokens(tail, seed * 100 + r, vocab)];
        const positions = Object.fromEntries(
          graph.facts.positions.map((p) => [
            p.name,
            p.rank === 1 ? last(ids.length) : [state, state + (tail >> 1), ids.length - 1],
          ]),
        );
        return { ids, positions };
      });
    };
    /** Outputs from `snapshot` against whole rows: the worst |Δ| relative to the outputs' scale. */
    const relative = async (rows: ReuseRow[], runner: RowReuse, snapshot = runner.empty): Promise<number> => {
      const whole = await wholeRows(original, rows, pad, graph.facts.positions);
      const out = await runner.runRows(rows, snapshot);
      const { worst, scale } = apart(whole, rowsOf2(out, rows));
      return worst / (1 + scale);
    };
    const rowsOf2 = (out: Record<string, ort.Tensor>, rows: ReuseRow[]) => {
      const t = out[graph.facts.outputs[0]!]!;
      const k = Number(t.dims[1]);
      const width = (r: ReuseRow) => Object.values(r.positions).find((p) => typeof p !== 'number')?.length ?? k;
      return rows.map((r, j) => ({ logits: Array.from((t.data as Float32Array).subarray(j * k, j * k + width(r))) }));
    };

    it('continues a state that ends anywhere in a chunk (S − P = 0 … 63), rows together (B = 3) and alone (B = 1)', async () => {
      for (const r of [0, 1, 17, 40, 63]) {
        const rows = rowsOf(192 + r, [5, 70, 130], r + 1);
        const P = snapshotLength(rows);
        expect(P, `a state of ${192 + r}`).toBe(192);
        const snapshot = await reuse.snapshot(rows[0]!.ids.slice(0, P));
        expect(await relative(rows, reuse, snapshot), `S − P = ${r}`).toBeLessThan(BOUND);
        const together = rowsOf2(await reuse.runRows(rows, snapshot), rows);
        for (const [j, row] of rows.entries()) {
          const alone = rowsOf2(await reuse.runRows([row], snapshot), [row]);
          expect(apart(alone, [together[j]!]).worst).toBeLessThan(BOUND * (1 + apart(alone, alone).scale));
        }
      }
    }, 120_000);

    it('takes a long state in pieces: 64-token pieces, 512-token ones and a snapshot continued hold the same past, of exactly P positions', async () => {
      const rows = rowsOf(700, [9, 33], 7);
      const P = snapshotLength(rows);
      expect(P).toBe(640);
      const state = rows[0]!.ids.slice(0, P);
      const small = await RowReuse.open(graph, { intraOpNumThreads: 1 }, { padId: pad, piece: 64, check: false });
      if (typeof small === 'string') throw new Error(small);
      try {
        const whole = await reuse.snapshot(state); // pieces of 512: 512 + 128
        const pieces = await small.snapshot(state); // 10 pieces of 64
        const continued = await reuse.snapshot(state, await reuse.snapshot(state.slice(0, 256)));
        for (const s of [whole, pieces, continued]) {
          expect(s.length).toBe(P);
          expect(await relative(rows, reuse, s)).toBeLessThan(BOUND);
          for (const [name, t] of Object.entries(s.past)) {
            // no pad and no question token in a snapshot: the state's P positions, or the conv's K − 1 columns
            if (name.includes('_key.') || name.includes('_value.')) expect(t.dims[2], name).toBe(P);
            if (name.includes('_conv.')) expect(t.dims[2], name).toBe(3);
            const a = t.data as Float32Array;
            const b = whole.past[name]!.data as Float32Array;
            let worst = 0;
            a.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - b[j]!))));
            expect(worst, name).toBeLessThan(1e-5);
          }
        }
        // a state pass never runs a length that is not a multiple of 64 (it would be padded)
        await expect(reuse.snapshot(state.slice(0, 100))).rejects.toThrow(/multiple of 64/);
      } finally {
        await small.close();
      }
    }, 120_000);

    it('shares nothing below 64 tokens: the rows run whole from the empty snapshot', async () => {
      const rows = rowsOf(40, [20, 90]);
      expect(snapshotLength(rows)).toBe(0);
      expect(await relative(rows, reuse)).toBeLessThan(BOUND);
    });

    it('answers a question asked twice the same, to the bit', async () => {
      const [a, b] = rowsOf(300, [50, 80], 3);
      const rows = [a!, b!, a!];
      const snapshot = await reuse.snapshot(a!.ids.slice(0, snapshotLength(rows)));
      const out = rowsOf2(await reuse.runRows(rows, snapshot), rows);
      expect(out[2]).toEqual(out[0]);
    });

    if (trunk === 'gemma3')
      it('reads the windows and the mask from last_pos relative to the snapshot (window 32 < P; keys after last_pos hidden)', async () => {
        expect(Number((trunkConfig(dirs[i]!).shape as { sliding_window: number }).sliding_window)).toBeLessThan(128);
        // last_pos 20 tokens into a 60-token question: the 40 tokens after it are masked
        const rows = rowsOf(150, [60, 60], 11, (n) => n - 40);
        const P = snapshotLength(rows);
        expect(P).toBe(128);
        expect(await relative(rows, reuse, await reuse.snapshot(rows[0]!.ids.slice(0, P)))).toBeLessThan(BOUND);
      });

    // Each mutation breaks what the rewrite must get right; the tests above must catch it.
    // [what, the edit, whether the snapshot comes from the correct graph (a question pass's own slip)]
    const mutations: Array<[string, (m: ModelProto) => void, boolean?]> = [
      ['a question pass one position off (rotary from P + 1 after a correct snapshot)', positionsOffByOne, true],
      ...(trunk === 'qwen35'
        ? ([
            ['the conv tail one column off', convTailOffByOne],
            ['the Scan started from zeros, not the snapshot', scanNotFed],
          ] as Array<[string, (m: ModelProto) => void, boolean?]>)
        : []),
      ...(trunk === 'gemma3'
        ? ([['mask keys not shifted by P', keysNotShifted]] as Array<[string, (m: ModelProto) => void, boolean?]>)
        : ([['the causal bias not shifted by P', diagonalNotShifted]] as Array<
            [string, (m: ModelProto) => void, boolean?]
          >)),
    ];
    it.each(mutations)(
      'fails when broken: %s',
      async (_, edit, correctSnapshot) => {
        const mutant = mutated(graph, edit);
        const broken = await RowReuse.open(mutant, { intraOpNumThreads: 1 }, { padId: pad, check: false });
        if (typeof broken === 'string') throw new Error(broken);
        try {
          const rows = rowsOf(192 + 17, [5, 70, 130], 5);
          const snapshot = await (correctSnapshot ? reuse : broken).snapshot(rows[0]!.ids.slice(0, 192));
          const off = await relative(rows, broken, snapshot);
          console.info(`${family}-${trunk}, ${_}: outputs off by ${off.toExponential(2)} (relative)`);
          expect(off).toBeGreaterThan(100 * BOUND);
        } finally {
          await broken.close();
        }
        // The probe runs both passes through the one graph: a slip of the question pass alone is a
        // question of how the runner feeds it, and a uniform shift of every pass is harmless (rotary
        // reads distances); every slip of the graph's own continuation it refuses.
        if (!correctSnapshot)
          expect(await RowReuse.open(mutant, { intraOpNumThreads: 1 }, { padId: pad })).toMatch(
            /differ from whole rows/,
          );
      },
      60_000,
    );
  });

  it('writes the continuation graph once, to the cache folder (never into the export’s), and finds it there', async () => {
    const dir = dirs[0]!;
    const before = readdirSync(dir).sort();
    const own = testCache();
    const first = await rowReuseGraph(join(dir, 'model.onnx'), { cacheDir: own });
    if ('reason' in first) throw new Error(first.reason);
    expect(first.path.startsWith(own)).toBe(true);
    expect(first.externalDataDir).toBe(dir.replace(/\/$/, ''));
    const written = statSync(first.path).mtimeMs;
    const again = await rowReuseGraph(join(dir, 'model.onnx'), { cacheDir: own });
    expect(again).toEqual(first);
    expect(statSync(first.path).mtimeMs).toBe(written);
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  describe('graphs the rewrite does not read give a reason, not an answer', () => {
    const reasonOf = async (dir: string): Promise<string> => {
      const graph = await rowReuseGraph(join(dir, 'model.onnx'), { cacheDir });
      if (!('reason' in graph)) {
        const opened = await RowReuse.open(graph, { intraOpNumThreads: 1 }, { padId: 0 });
        if (typeof opened === 'string') return opened;
        await opened.close();
        throw new Error(`${dir}: recognised and it holds`);
      }
      return graph.reason;
    };
    /** A copy of a replica's export, its graph edited, in a folder of its own. */
    const broken = (family: TrunkFamily, trunk: TrunkKind, edit: (m: ModelProto) => void): string => {
      const from = dirs[REPLICAS.findIndex(([f, t]) => f === family && t === trunk)]!;
      const dir = mkdtempSync(join(tmpdir(), 'assay-row-broken-'));
      const model = decodeModel(readFileSync(join(from, 'model.onnx')));
      edit(model);
      writeFileSync(join(dir, 'model.onnx'), encodeModel(model));
      copyFileSync(join(from, 'model.onnx_data'), join(dir, 'model.onnx_data'));
      return dir;
    };

    it('the toy causal replica (learned positions, LayerNorm, GELU)', async () => {
      expect(await reasonOf(ensureKevReplica())).toMatch(/Range/);
    }, 120_000);

    it('a recurrence that starts from a state other than zeros', async () => {
      const dir = broken('kev', 'qwen35', (m) => {
        const zero = m.graph!.node!.find((n) => n.opType === 'Scan')!.input![0]!;
        const fill = m.graph!.node!.find((n) => n.output![0] === zero)!;
        fill.attribute = [
          { name: 'value', type: AttributeType.TENSOR, t: { dataType: DataType.FLOAT, dims: [1], floatData: [0.01] } },
        ];
      });
      expect(await reasonOf(dir)).toMatch(/initial state is not zeros/);
    });

    it('a dilated conv', async () => {
      const dir = broken('kev', 'qwen35', (m) => {
        const conv = m.graph!.node!.find((n) => n.opType === 'Conv')!;
        conv.attribute = [
          ...conv.attribute!.filter((a) => a.name !== 'dilations'),
          { name: 'dilations', type: AttributeType.INTS, ints: [2] },
        ];
      });
      expect(await reasonOf(dir)).toMatch(/dilated/);
    });

    it('learned positions beside rotary (a Range over the row into a Gather)', async () => {
      const dir = broken('kev', 'qwen3', (m) => {
        const g = m.graph!;
        const embed = g.node!.find((n) => n.opType === 'Gather' && n.input![1] === 'input_ids')!.output![0]!;
        const seq = g.node!.find((n) => n.name === '/model/Cast')!.input![0]!; // T, as the rotary Range's length
        g.initializer!.push(
          { name: 'learned_pos', dataType: DataType.FLOAT, dims: [4096, 32], rawData: new Uint8Array(4096 * 32 * 4) },
          { name: 'zero_i64', dataType: DataType.INT64, dims: [], int64Data: [0] },
          { name: 'one_i64', dataType: DataType.INT64, dims: [], int64Data: [1] },
        );
        for (const n of g.node!) n.input = n.input!.map((x) => (x === embed ? 'embed_plus_pos' : x));
        g.node!.push(
          { opType: 'Range', input: ['zero_i64', seq, 'one_i64'], output: ['pos_ids'], name: 'pos_range' },
          { opType: 'Gather', input: ['learned_pos', 'pos_ids'], output: ['pos_emb'], name: 'pos_gather' },
          { opType: 'Add', input: [embed, 'pos_emb'], output: ['embed_plus_pos'], name: 'pos_add' },
        );
        g.node = topologicalOrder(g.node!);
      });
      expect(await reasonOf(dir)).toMatch(/Range pos_range: a Range over the row read otherwise/);
    });

    it('a head that reads every token of the row (a mean over the sequence): read, but refused by the probe', async () => {
      const dir = broken('kev', 'qwen3', (m) => {
        const g = m.graph!;
        const hidden = '/model/norm/Mul_1_output_0';
        for (const n of g.node!) n.input = n.input!.map((x) => (x === hidden ? 'pooled_hidden' : x));
        g.node!.push(
          {
            opType: 'ReduceMean',
            input: [hidden],
            output: ['row_mean'],
            name: 'row_mean',
            attribute: [
              { name: 'axes', type: AttributeType.INTS, ints: [1] },
              { name: 'keepdims', type: AttributeType.INT, i: 1 },
            ],
          },
          { opType: 'Add', input: [hidden, 'row_mean'], output: ['pooled_hidden'], name: 'pooled' },
        );
        g.node = topologicalOrder(g.node!);
      });
      expect(await reasonOf(dir)).toMatch(/differ from whole rows on a probe/);
    });
  });
});

const initializer = (m: ModelProto, name: string, dataType: number, values: number[], dims: number[] = []) => {
  m.graph!.initializer!.push(
    dataType === DataType.FLOAT
      ? { name, dataType, dims, floatData: values }
      : { name, dataType, dims, int64Data: values },
  );
  return name;
};

/** The rotary Range counts from P + 1: every position of a question pass one too far. */
function positionsOffByOne(m: ModelProto): void {
  const g = m.graph!;
  const range = g.node!.find(
    (n) => n.opType === 'Range' && /past_as_|assay_past_length/.test(n.input![0]!) && !n.name!.endsWith('/keys'),
  )!;
  const one = initializer(m, 'mutant_one', DataType.FLOAT, [1]);
  g.node!.push(
    { opType: 'Add', input: [range.input![0]!, one], output: ['mutant_start'], name: 'mutant_start' },
    { opType: 'Add', input: [range.input![1]!, one], output: ['mutant_limit'], name: 'mutant_limit' },
  );
  range.input = ['mutant_start', 'mutant_limit', range.input![2]!];
  g.node = topologicalOrder(g.node!);
}

/** The snapshot's conv columns taken one to the left (K columns back, the last one left out). */
function convTailOffByOne(m: ModelProto): void {
  const starts = initializer(m, 'mutant_tail_start', DataType.INT64, [-4], [1]);
  const ends = initializer(m, 'mutant_tail_end', DataType.INT64, [-1], [1]);
  for (const n of m.graph!.node!)
    if (n.opType === 'Slice' && n.output![0]!.startsWith('assay_present_conv.'))
      n.input = [n.input![0]!, starts, ends, n.input![3]!];
}

/** Each Scan starts from zeros again: the snapshot's recurrent state is not fed. */
function scanNotFed(m: ModelProto): void {
  const zero = initializer(m, 'mutant_zero', DataType.FLOAT, [0]);
  for (const n of m.graph!.node!.filter((x) => x.opType === 'Scan')) {
    const name = `${n.name}/mutant_zero_state`;
    m.graph!.node!.push({ opType: 'Mul', input: [n.input![0]!, zero], output: [name], name });
    n.input![0] = name;
  }
  m.graph!.node = topologicalOrder(m.graph!.node!);
}

/** The causal bias's diagonal left at k (not k + P): the past hidden from most queries. */
function diagonalNotShifted(m: ModelProto): void {
  const trilu = m.graph!.node!.find((n) => n.opType === 'Trilu')!;
  const add = m.graph!.node!.find((n) => n.output![0] === trilu.input![1])!;
  trilu.input![1] = add.input!.find((x) => x !== PAST_LENGTH)!;
}

/** The mask's key indices 0 … P + T − 1 (absolute) against row-relative queries. */
function keysNotShifted(m: ModelProto): void {
  const keys = m.graph!.node!.find((n) => n.opType === 'Range' && n.name!.endsWith('/keys'))!;
  const zero = initializer(m, 'mutant_zero_i64', DataType.INT64, [0]);
  m.graph!.node!.push({
    opType: 'Add',
    input: [keys.input![1]!, PAST_LENGTH],
    output: ['mutant_keys_limit'],
    name: 'mutant_keys_limit',
  });
  keys.input = [zero, 'mutant_keys_limit', keys.input![2]!];
  m.graph!.node = topologicalOrder(m.graph!.node!);
}

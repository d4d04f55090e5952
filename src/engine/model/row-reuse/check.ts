// The load-time probe of a continuation graph: rows run from a snapshot (taken in two pieces) must
// give the head outputs the same rows give run whole (from the empty snapshot, through the same
// session). It runs on every open: the matcher reads a graph's structure, and this catches what
// structure alone cannot tell (a head or a layer that reads the row in a way the rewrite did not
// see), so a graph it does not hold for runs whole rows rather than wrong answers.
import type * as ort from 'onnxruntime-node';
import type { ReuseRow, RowGraphFacts, Snapshot } from './names.js';

/** What the probe runs (RowReuse). */
export interface Probed {
  readonly multiple: number;
  readonly facts: RowGraphFacts;
  snapshot(tokens: readonly number[], from?: Snapshot): Promise<Snapshot>;
  runRows(rows: readonly ReuseRow[], snapshot?: Snapshot): Promise<Record<string, ort.Tensor>>;
}

/** Outputs apart by more than this relative to their scale: the graph does not continue rows (fp32 reuse differs by ~1e-6). */
const PROBE_TOLERANCE = 1e-3;

/** Undefined when rows from a snapshot equal whole rows on a probe; else why not. */
export async function checkContinuation(reuse: Probed): Promise<string | undefined> {
  const m = reuse.multiple;
  const vocab = Math.max(2, Math.min(reuse.facts.vocab ?? 256, 1000));
  const token = (i: number) => (i * 7919 + 17) % vocab;
  const state = Array.from({ length: 2 * m }, (_, i) => token(i));
  const rows: ReuseRow[] = [7, 13].map((tail, r) => {
    const ids = [...state, ...Array.from({ length: tail }, (_, i) => token(1000 + 31 * r + i))];
    const last = ids.length - 1;
    const positions = Object.fromEntries(
      reuse.facts.positions.map((p) => [
        p.name,
        p.rank === 1 ? last : [state.length, state.length + (tail >> 1), last],
      ]),
    );
    return { ids, positions };
  });
  const first = await reuse.snapshot(state.slice(0, m));
  const snapshot = await reuse.snapshot(state, first);
  const [whole, continued] = [await reuse.runRows(rows), await reuse.runRows(rows, snapshot)];
  for (const name of reuse.facts.outputs) {
    const { worst, scale } = apart(whole[name]!, continued[name]!);
    if (!(worst <= PROBE_TOLERANCE * (1 + scale)))
      return `rows continued from a snapshot differ from whole rows on a probe (${name}: |Δ| ${worst.toExponential(2)})`;
  }
  return undefined;
}

function apart(a: ort.Tensor, b: ort.Tensor): { worst: number; scale: number } {
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  if (x.length !== y.length) return { worst: Infinity, scale: 0 };
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < x.length; i++) {
    worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
    scale = Math.max(scale, Math.abs(x[i]!));
  }
  return { worst, scale };
}

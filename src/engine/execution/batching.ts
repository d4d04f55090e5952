// Packing across requests: concurrent requests for one model whose whole prompt fits one packed
// pass (no prefix KV to reuse: a new state, one question or the prefix cache off) share that pass.
// Each request is its own tree of sequences with no past (runner PackedPass, parent -1 = a root):
// a token sees its own ancestors only, so the attention bias is block-diagonal and no token ever
// sees another request's tokens, and every request gets the answers of a pass of its own.
//
// A request waits for its turn on the scheduler as before; when the turn comes it takes, besides
// its own tree, the trees of the requests waiting behind it (oldest first) up to the token budget.
// A request whose tree went with an earlier pass finds its answers ready when its own turn comes.
// A pass takes trees of its own scheduler lane only: an interactive pass is never made longer by
// batch work (a batch pass is granted only when no interactive request waits, so it finds none).
import type { PackedPass } from '../model/runner.js';
import type { Lane } from '../types.js';

interface Item {
  pass: PackedPass;
  lane: Lane;
  settled: boolean;
  resolve: (rows: number[][]) => void;
  reject: (error: unknown) => void;
}

/** Waits for the request's turn, then runs `fn` (scheduler Ticket.pass). */
export type Turn = <T>(fn: () => Promise<T>) => Promise<T>;

/** Several packed passes with no past as one: their tokens, parents and reads offset, roots kept. */
export function mergePasses(passes: readonly PackedPass[]): PackedPass {
  const merged: PackedPass = { tokens: [], parents: [], reads: [] };
  for (const p of passes) {
    const offset = merged.tokens.length;
    merged.tokens.push(...p.tokens);
    merged.parents.push(...p.parents.map((parent) => (parent < 0 ? -1 : parent + offset)));
    merged.reads.push(...p.reads.map((r) => ({ at: r.at + offset, candidates: r.candidates })));
  }
  return merged;
}

export class RequestBatcher {
  private readonly pending: Item[] = [];

  /**
   * @param budget most tokens in one pass (a larger tree still runs, alone)
   * @param run runs one packed pass with no past; returns a row per read
   * @param batchBudget most tokens in one pass of the batch lane (its passes stay short: an
   *   interactive request may wait behind one)
   */
  constructor(
    private readonly budget: number,
    private readonly run: (pass: PackedPass) => Promise<number[][]>,
    private readonly batchBudget = budget,
  ) {}

  /** The read rows of `pass` (a packed pass with no past), run alone or with others of its lane waiting. */
  async submit(pass: PackedPass, turn: Turn, lane: Lane = 'interactive'): Promise<number[][]> {
    let item!: Item;
    const rows = new Promise<number[][]>((resolve, reject) => {
      item = { pass, lane, settled: false, resolve, reject };
    });
    // Settled by another request's pass while this one still waits for its turn: not unhandled.
    rows.catch(() => {});
    this.pending.push(item);
    try {
      await turn(async () => {
        if (!item.settled) await this.flush(item);
      });
    } catch (error) {
      // Aborted while waiting: its tree no longer rides with anyone.
      const i = this.pending.indexOf(item);
      if (i >= 0) this.pending.splice(i, 1);
      if (!item.settled) throw error;
    }
    return rows; // (rejects with the pass's error when it failed)
  }

  /** One pass: `first` and the oldest waiting trees of its lane that fit the budget with it. */
  private async flush(first: Item): Promise<void> {
    const batch = [first];
    this.pending.splice(this.pending.indexOf(first), 1);
    const budget = first.lane === 'batch' ? Math.min(this.budget, this.batchBudget) : this.budget;
    let tokens = first.pass.tokens.length;
    for (let i = 0; i < this.pending.length;) {
      const next = this.pending[i]!;
      if (next.lane !== first.lane || tokens + next.pass.tokens.length > budget) {
        i++;
        continue;
      }
      tokens += next.pass.tokens.length;
      batch.push(next);
      this.pending.splice(i, 1);
    }
    for (const item of batch) item.settled = true;
    try {
      const rows = await this.run(mergePasses(batch.map((b) => b.pass)));
      let offset = 0;
      for (const item of batch) {
        item.resolve(rows.slice(offset, offset + item.pass.reads.length));
        offset += item.pass.reads.length;
      }
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  }
}

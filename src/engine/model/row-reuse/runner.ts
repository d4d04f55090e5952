// Runs a causal-row family's continuation graph (rewrite.ts): a state's tokens once, in pieces, into
// a snapshot (every layer's presents after P tokens), then rows that continue from it, each row the
// whole row's tokens from P on. The state pass runs exactly P tokens, never a pad: P is a multiple
// of `multiple` (64: the hybrid trunks' Scan chunk, so a question pass's chunks fall where the whole
// row's do), and the state's last tokens past P ride at the start of each row. Rows are padded on
// the right to a multiple of 64 with the family's pad id, as whole rows are: every layer is causal,
// so the padding reaches no gathered position. One session serves both (whole rows are rows from the
// empty snapshot), so the weights are loaded once.
import * as ort from 'onnxruntime-node';
import { ModelLoadError } from '../../errors.js';
import type { PassStep } from '../runner.js';
import { openSession, type SessionOptions } from '../session.js';
import { checkContinuation } from './check.js';
import { emptyPast, i64, paddedIds, positionInput } from './feeds.js';
import { rememberRefusal, type RowGraph } from './graph-cache.js';
import {
  PAST_LENGTH,
  pastKey,
  pastValue,
  presentOf,
  type ReuseRow,
  type RowGraphFacts,
  type Snapshot,
} from './names.js';

export type { ReuseRow, Snapshot } from './names.js';

/** What the published exports take: rows of a multiple of 64 tokens (the hybrid trunks' Scan chunk). */
export const REUSE_MULTIPLE = 64;
/** A state pass's tokens at most (the attention of a piece is [heads, piece, P + piece]). */
export const STATE_PIECE = 512;

export interface RowReuseOptions {
  /** The family's pad id (rows are right-padded with it). */
  padId: number;
  /** P and each pass's rows are multiples of this (default 64). */
  multiple?: number;
  /** A state pass's tokens at most (default 512, a multiple of `multiple`). */
  piece?: number;
  /** Check at open that rows from a snapshot equal whole rows on a probe (default on). */
  check?: boolean;
}

export class RowReuse {
  readonly multiple: number;
  readonly piece: number;
  readonly empty: Snapshot;
  /** A snapshot's bytes per token and besides, as the last one taken measured them (snapshotBytes). */
  private perToken: number | undefined;
  private fixedBytes = 0;

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly facts: RowGraphFacts,
    private readonly padId: number,
    options: RowReuseOptions,
  ) {
    this.multiple = options.multiple ?? REUSE_MULTIPLE;
    this.piece = Math.max(this.multiple, Math.floor((options.piece ?? STATE_PIECE) / this.multiple) * this.multiple);
    const past = emptyPast(facts);
    this.empty = { length: 0, tokens: [], past, bytes: bytesOf(past) };
  }

  /**
   * Opens the continuation graph; a load error, or a probe on which rows from a snapshot do not equal
   * whole rows, is the reason returned instead (the engine then keeps whole rows on the export).
   */
  static async open(graph: RowGraph, session: SessionOptions, options: RowReuseOptions): Promise<RowReuse | string> {
    let opened: ort.InferenceSession;
    try {
      opened = await openSession(graph.path, session, graph.externalDataDir);
    } catch (error) {
      return `the continuation graph does not load (${(error as ModelLoadError).message})`;
    }
    const reuse = new RowReuse(opened, graph.facts, options.padId, options);
    if (options.check === false) return reuse;
    const wrong = await checkContinuation(reuse).catch((error: Error) => `a probe pass failed (${error.message})`);
    if (!wrong) return reuse;
    await reuse.close();
    // a refusal is remembered beside the rewrite (a later load answers without the probe); a failed pass is not
    if (!wrong.startsWith('a probe pass failed')) await rememberRefusal(graph, wrong);
    return wrong;
  }

  /**
   * The snapshot after `tokens` (a multiple of `multiple`; none: the empty snapshot), run from `from`
   * (a snapshot of its first tokens: a longer state continues a shorter one) in pieces of `piece`.
   */
  async snapshot(
    tokens: readonly number[],
    from: Snapshot = this.empty,
    step: PassStep = (pass) => pass(),
  ): Promise<Snapshot> {
    if (tokens.length % this.multiple !== 0)
      throw new Error(`a snapshot of ${tokens.length} tokens: not a multiple of ${this.multiple}`);
    if (!startsWith(tokens, from.tokens)) throw new Error('the snapshot to continue is not of these tokens');
    let at = from;
    while (at.length < tokens.length) {
      const piece = tokens.slice(at.length, Math.min(tokens.length, at.length + this.piece));
      const last = piece.length - 1;
      // The head reads the piece's last position (its output is not read); Arbiter's mask keeps every key.
      const positions = Object.fromEntries(this.facts.positions.map((p) => [p.name, positionInput([last], p.rank)]));
      const names = Object.keys(this.empty.past);
      const feeds = {
        input_ids: i64(piece, [1, piece.length]),
        ...positions,
        [PAST_LENGTH]: i64([at.length], []),
        ...at.past,
      };
      const out = await step(() => this.session.run(feeds, names.map(presentOf)), at.length + piece.length);
      const past = Object.fromEntries(names.map((n) => [n, out[presentOf(n)]!]));
      at = {
        length: at.length + piece.length,
        tokens: tokens.slice(0, at.length + piece.length),
        past,
        bytes: bytesOf(past),
      };
    }
    this.measure(at);
    return at;
  }

  /**
   * The bytes a snapshot of `tokens` tokens will hold, as the last snapshot taken measured them (its
   * keys and values grow with the tokens; a conv tail and a recurrent state do not); undefined
   * before any was taken.
   */
  snapshotBytes(tokens: number): number | undefined {
    return this.perToken === undefined ? undefined : this.fixedBytes + this.perToken * tokens;
  }

  private measure(snapshot: Snapshot): void {
    if (snapshot.length === 0) return;
    let growing = 0;
    for (let l = 0; l < this.facts.attention; l++)
      for (const name of [pastKey(l), pastValue(l)]) growing += (snapshot.past[name]!.data as Float32Array).byteLength;
    this.perToken = growing / snapshot.length;
    this.fixedBytes = snapshot.bytes - growing;
  }

  /**
   * The head's outputs (the graph's own, rows in order) for rows that continue `snapshot`: each row
   * begins with the snapshot's tokens, and its positions (in the whole row) lie after them.
   */
  async runRows(rows: readonly ReuseRow[], snapshot: Snapshot = this.empty): Promise<Record<string, ort.Tensor>> {
    const P = snapshot.length;
    if (rows.length === 0) throw new Error('no rows to run');
    for (const row of rows) {
      if (!startsWith(row.ids, snapshot.tokens) || row.ids.length <= P)
        throw new Error('a row does not continue the snapshot (it must begin with its tokens and go past them)');
      for (const [name, at] of Object.entries(row.positions))
        for (const p of typeof at === 'number' ? [at] : at)
          if (p < P || p >= row.ids.length)
            throw new Error(`${name} ${p}: not in the row after the snapshot's ${P} tokens`);
    }
    const feeds: Record<string, ort.Tensor> = {
      input_ids: paddedIds(
        rows.map((r) => r.ids.slice(P)),
        this.padId,
        this.multiple,
      ),
      [PAST_LENGTH]: i64([P], []),
      ...snapshot.past,
    };
    for (const { name, rank } of this.facts.positions) {
      const shifted = rows.map((r) => {
        const at = r.positions[name];
        if (at === undefined) throw new Error(`a row without its ${name}`);
        return typeof at === 'number' ? at - P : at.map((p) => p - P);
      });
      feeds[name] = positionInput(shifted, rank);
    }
    return this.session.run(feeds, this.facts.outputs);
  }

  /** The continuation graph's inputs: the export's own, then the past. */
  get inputNames(): readonly string[] {
    return this.session.inputNames;
  }

  /** Its outputs: the export's own, then the presents. */
  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

function startsWith(row: readonly number[], prefix: readonly number[]): boolean {
  if (row.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (row[i] !== prefix[i]) return false;
  return true;
}

function bytesOf(past: Readonly<Record<string, ort.Tensor>>): number {
  return Object.values(past).reduce((n, t) => n + (t.data as Float32Array).byteLength, 0);
}

// Fair scheduling of one model session: work is granted one forward pass at a time, in the order
// passes are asked for. A request asks for its next pass only when its previous one is done, so
// concurrent requests take turns pass by pass (round robin): a one-question request waits for at
// most one pass of each other request, never for a 255-option or 400-question request to finish.
// onnxruntime already uses every core for one pass, so passes never overlap.
//
// Admission is bounded: at most `maxQueue` requests wait beside the one holding the session;
// past that a request is refused at once (OverloadedError → 529) instead of growing memory.
// An aborted request leaves at its next turn (or while waiting for one) with AbortedError.
// A refusal says when to come back: the requests admitted × the recent time one request holds the
// session, each refused caller a slot of its own after that (RetrySlots), so callers that honour
// the hint exactly come back one by one instead of together.
//
// Two lanes. A batch request (a batch job's item) gets a pass only while no interactive request is
// in the scheduler (admitted and not finished), so an interactive request waits behind at most the
// one batch pass already running, and its later passes behind none: batch work uses the time
// interactive traffic leaves. Batch requests are never refused (their runner bounds its own work in
// flight), are not counted in `queueDepth` or the retry hints, and take turns among themselves round
// robin as interactive ones do. An interactive request holds the batch lane from the moment it
// reaches the engine (`arrive`), while it is still being planned: else a batch pass granted during
// its planning would run before its first pass, and it would wait behind two batch passes. For the
// same reason a batch turn is granted one event-loop turn after the pass before it ends (next()): a
// pass blocks the engine thread, and a request that reached it meanwhile is only seen after that.
import { RetrySlots } from '../../protocol/index.js';
import { AbortedError, OverloadedError } from '../errors.js';
import type { Lane } from '../types.js';

/** What one request is taken to hold the session for before any has been timed (and its floor then). */
const FIRST_GUESS_MS = 100;

interface Turn {
  grant: () => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/** One admitted request: asks for passes through `pass`. */
export interface Ticket {
  /** Runs `fn` as this request's next pass, after the passes asked for before it. */
  pass<T>(fn: () => Promise<T>): Promise<T>;
}

/** Requests of one lane: admitted (not finished), and of those the ones that have run a pass. */
interface LaneCount {
  admitted: number;
  started: number;
}

export class Scheduler {
  private readonly turns: Record<Lane, Turn[]> = { interactive: [], batch: [] };
  private readonly counts: Record<Lane, LaneCount> = {
    interactive: { admitted: 0, started: 0 },
    batch: { admitted: 0, started: 0 },
  };
  private busy = false;
  /** Interactive requests that reached the engine and are not admitted yet (being planned). */
  private arriving = 0;
  /**
   * Moving average of how long one request holds the session (the sum of its passes), for
   * retry-after hints; undefined until a request has finished (the first one sets it).
   */
  private serviceMs: number | undefined;
  /** Admitted interactive requests that have run a pass: the session time each has held so far. */
  private readonly holding = new Set<{ held: number; since?: number }>();
  private readonly slots = new RetrySlots();
  /** A batch turn's grant, waiting for the event loop's next turn (next()). */
  private batchGrant: ReturnType<typeof setImmediate> | undefined;

  constructor(private readonly maxQueue: number) {}

  /** Interactive requests admitted that have not run a pass yet (the load signal an autoscaler reads). */
  get queueDepth(): number {
    return this.counts.interactive.admitted - this.counts.interactive.started;
  }

  /** Batch requests admitted that have not run a pass yet. */
  get batchQueueDepth(): number {
    return this.counts.batch.admitted - this.counts.batch.started;
  }

  /** Requests in progress, both lanes: they have run at least one pass and are not finished. */
  get running(): number {
    return this.counts.interactive.started + this.counts.batch.started;
  }

  /**
   * An interactive request reached the engine (it is planned before it is admitted): no batch pass
   * starts until the returned release is called, once it is admitted or has failed. Idempotent.
   */
  arrive(): () => void {
    this.arriving++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.arriving--;
      this.next();
    };
  }

  /**
   * Admits a request (or refuses it: OverloadedError, never in the batch lane) and runs `work`,
   * which runs its passes through the ticket.
   */
  async request<T>(work: (ticket: Ticket) => Promise<T>, signal?: AbortSignal, lane: Lane = 'interactive'): Promise<T> {
    if (signal?.aborted) throw new AbortedError();
    const count = this.counts[lane];
    if (lane === 'interactive' && count.admitted > this.maxQueue) throw new OverloadedError(this.retryAfterMs() / 1000);
    count.admitted++;
    let started = false;
    const hold: { held: number; since?: number } = { held: 0 };
    const ticket: Ticket = {
      pass: async (fn) => {
        await this.turn(signal, lane);
        if (!started) {
          started = true;
          count.started++;
          if (lane === 'interactive') this.holding.add(hold);
        }
        hold.since = performance.now();
        try {
          return await fn();
        } finally {
          hold.held += performance.now() - hold.since;
          hold.since = undefined;
          this.release();
        }
      },
    };
    try {
      return await work(ticket);
    } finally {
      count.admitted--;
      if (started) {
        count.started--;
        this.holding.delete(hold);
        // The retry hints tell interactive callers how long an interactive request holds the session.
        if (lane === 'interactive')
          this.serviceMs = this.serviceMs === undefined ? hold.held : 0.8 * this.serviceMs + 0.2 * hold.held;
      }
      // The last interactive request out lets the batch lane's passes go.
      if (lane === 'interactive') this.next();
    }
  }

  /**
   * The wait to tell a refused request: the admitted requests' work, then a slot of its own. Slots
   * are spaced half again the usual service time: the average is noisy, and a caller told too early
   * spends one of its few retries on another refusal, while one told a little late only waits.
   */
  private retryAfterMs(): number {
    const service = this.serviceEstimateMs(performance.now());
    return this.slots.next(performance.now(), this.counts.interactive.admitted * service, 1.5 * service);
  }

  /**
   * How long one request holds the session: the moving average once a request has finished. Before
   * that (a fresh server's first burst) nothing has been timed, and a guess told to a burst of
   * callers sends them all back too early: the longest any running request has held the session so
   * far is a floor that grows while they wait.
   */
  private serviceEstimateMs(now: number): number {
    if (this.serviceMs !== undefined) return this.serviceMs;
    let longest = 0;
    for (const h of this.holding) longest = Math.max(longest, h.held + (h.since === undefined ? 0 : now - h.since));
    return Math.max(FIRST_GUESS_MS, longest);
  }

  /** Runs `fn` alone on the session once every pass asked for before it is done (e.g. closing it). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.turn().then(() => fn().finally(() => this.release()));
  }

  private turn(signal?: AbortSignal, lane: Lane = 'interactive'): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError());
    const turns = this.turns[lane];
    return new Promise<void>((resolve, reject) => {
      const turn: Turn = {
        signal,
        grant: () => {
          signal?.removeEventListener('abort', turn.onAbort!);
          resolve();
        },
      };
      turn.onAbort = () => {
        const i = turns.indexOf(turn);
        if (i >= 0) {
          turns.splice(i, 1);
          reject(new AbortedError());
        }
      };
      signal?.addEventListener('abort', turn.onAbort, { once: true });
      turns.push(turn);
      this.next();
    });
  }

  private release(): void {
    this.busy = false;
    this.next();
  }

  private batchMayRun(): boolean {
    return this.counts.interactive.admitted === 0 && this.arriving === 0;
  }

  /**
   * Grants the next turn: an interactive one at once, else a batch one while no interactive request
   * is in or arriving, one event-loop turn later. A pass blocks this thread (onnxruntime runs it
   * synchronously), so a request that reached the thread meanwhile is only seen in the next I/O
   * phase: a batch turn granted at once, as the pass ends, would make it wait behind a second batch
   * pass. Deferred (setImmediate, which runs after that phase), the grant sees its `arrive` first.
   */
  private next(): void {
    if (this.busy) return;
    const turn = this.turns.interactive.shift();
    if (turn) return this.grant(turn);
    if (this.batchGrant || this.turns.batch.length === 0 || !this.batchMayRun()) return;
    this.batchGrant = setImmediate(() => {
      this.batchGrant = undefined;
      // Taken meanwhile by an interactive request (its release calls next again), or held by one.
      if (this.busy || !this.batchMayRun()) return;
      const batch = this.turns.batch.shift();
      if (batch) this.grant(batch);
    });
  }

  private grant(turn: Turn): void {
    this.busy = true;
    turn.grant();
  }
}

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
import { RetrySlots } from '../../protocol/index.js';
import { AbortedError, OverloadedError } from '../errors.js';

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

export class Scheduler {
  private readonly turns: Turn[] = [];
  private busy = false;
  private admitted = 0;
  private startedCount = 0;
  /**
   * Moving average of how long one request holds the session (the sum of its passes), for
   * retry-after hints; undefined until a request has finished (the first one sets it).
   */
  private serviceMs: number | undefined;
  /** Admitted requests that have run a pass: the session time each has held so far. */
  private readonly holding = new Set<{ held: number; since?: number }>();
  private readonly slots = new RetrySlots();

  constructor(private readonly maxQueue: number) {}

  /** Requests admitted that have not run a pass yet (the load signal an autoscaler reads). */
  get queueDepth(): number {
    return this.admitted - this.startedCount;
  }

  /** Requests in progress: they have run at least one pass and are not finished. */
  get running(): number {
    return this.startedCount;
  }

  /** Admits a request (or refuses it: OverloadedError) and runs `work`, which runs its passes through the ticket. */
  async request<T>(work: (ticket: Ticket) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw new AbortedError();
    if (this.admitted > this.maxQueue) throw new OverloadedError(this.retryAfterMs() / 1000);
    this.admitted++;
    let started = false;
    const hold: { held: number; since?: number } = { held: 0 };
    const ticket: Ticket = {
      pass: async (fn) => {
        await this.turn(signal);
        if (!started) {
          started = true;
          this.startedCount++;
          this.holding.add(hold);
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
      this.admitted--;
      if (started) {
        this.startedCount--;
        this.holding.delete(hold);
        this.serviceMs = this.serviceMs === undefined ? hold.held : 0.8 * this.serviceMs + 0.2 * hold.held;
      }
    }
  }

  /**
   * The wait to tell a refused request: the admitted requests' work, then a slot of its own. Slots
   * are spaced half again the usual service time: the average is noisy, and a caller told too early
   * spends one of its few retries on another refusal, while one told a little late only waits.
   */
  private retryAfterMs(): number {
    const service = this.serviceEstimateMs(performance.now());
    return this.slots.next(performance.now(), this.admitted * service, 1.5 * service);
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

  private turn(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError());
    return new Promise<void>((resolve, reject) => {
      const turn: Turn = {
        signal,
        grant: () => {
          signal?.removeEventListener('abort', turn.onAbort!);
          resolve();
        },
      };
      turn.onAbort = () => {
        const i = this.turns.indexOf(turn);
        if (i >= 0) {
          this.turns.splice(i, 1);
          reject(new AbortedError());
        }
      };
      signal?.addEventListener('abort', turn.onAbort, { once: true });
      this.turns.push(turn);
      this.next();
    });
  }

  private release(): void {
    this.busy = false;
    this.next();
  }

  private next(): void {
    if (this.busy) return;
    const turn = this.turns.shift();
    if (!turn) return;
    this.busy = true;
    turn.grant();
  }
}

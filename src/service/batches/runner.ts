// The batch runner: claims a group of lines from the store (one batch's lines sharing a state),
// answers them in the engine's batch lane (answer-lines.ts), writes their results and settles the
// claim. A few claims run at once, so the next group is planned while the engine runs one; the
// engine's scheduler puts every interactive pass first. A transient failure (the model is loading,
// the engine restarted) gives the claim back and waits; stopping gives back what is in flight. A
// store fault (PostgreSQL away, a full disk: store-health.ts) pauses the runner under the store's
// reconnect policy (reconnectWait, DEFAULTS.batchStoreRetry): lines it answered meanwhile are kept and written
// once the store is back (a line already written by another replica is not written again).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Caller, ServiceContext } from '../evaluate.js';
import { answerLines, isTransient } from './answer-lines.js';
import { reconnectWait, storeFault } from './store-health.js';
import type { BatchStore, ClaimedGroup } from './store.js';

/** The owner's token budget, spent by batch lines at the pace it refills (never refused: waited for). */
export interface BatchPacer {
  /** How long the owner's token budget needs before it holds `tokens` (0: now). */
  waitMs(owner: string, tokens: number): number;
  charge(owner: string, inputTokens: number): void;
}

export interface RunnerOptions {
  store: BatchStore;
  service: ServiceContext;
  /** This process's name in the store's leases. */
  runnerId: string;
  /** Most lines per claim (fewer while lines are slow: a claim is sized to a quarter of its lease). */
  maxItems: number;
  /** How long a claim is leased: past it, another runner takes its lines up. */
  leaseMs: number;
  /** Claims in flight at once. */
  concurrency: number;
  /** How long to wait when nothing is claimable (another replica's batch may arrive), ms. */
  idleMs: number;
  pacer?: BatchPacer;
  /** Whether the batch's owner (a key's hash) may use a model; default: every model. */
  allows?(owner: string, name: string, id: string): boolean;
  /** Told each line's outcome (metrics). */
  onLine?(facts: { ok: boolean; inputTokens: number }): void;
  /** Told a failure of the loop itself (the store is gone): logged; the loop waits and goes on. */
  onError?(error: unknown): void;
}

/** How many recently run groups a runner asks for first. */
const RECENT_GROUPS = 32;

export class BatchRunner {
  private readonly stopping = new AbortController();
  private readonly loops: Array<Promise<void>> = [];
  private readonly sleepers = new Set<() => void>();
  /** Moving average of the time one line takes, ms (sizes the claims); undefined before the first claim. */
  private msPerLine: number | undefined;
  /** The groups (states) this runner ran last, newest last: its prefix cache likely holds them. */
  private readonly recent: string[] = [];
  /** Moving average of one line's input tokens (what a claim is expected to take from its key's budget). */
  private tokensPerLine = 0;
  /** Store faults in a row (the reconnect policy's wait grows with them); 0 while the store answers. */
  private faults = 0;

  constructor(private readonly o: RunnerOptions) {}

  start(): void {
    for (let i = 0; i < this.o.concurrency; i++) this.loops.push(this.loop());
  }

  /** Something became claimable here (a batch started): idle loops look now. */
  wake(): void {
    for (const wake of this.sleepers) wake();
    this.sleepers.clear();
  }

  /** Stops claiming; lines in flight are given back to the store (they run again on a restart). */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.wake();
    await Promise.all(this.loops);
  }

  private async idle(ms: number): Promise<void> {
    let wake = (): void => undefined;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
      this.sleepers.add(resolve);
    });
    await Promise.race([woken, sleep(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined)]);
    this.sleepers.delete(wake);
  }

  private async loop(): Promise<void> {
    const { store } = this.o;
    while (!this.stopping.signal.aborted) {
      let claim: ClaimedGroup | undefined;
      try {
        claim = await store.claim(this.o.runnerId, {
          maxItems: this.claimSize(),
          leaseMs: this.o.leaseMs,
          now: Date.now(),
          // Lines of a state this runner encoded lately come here first (on replicas: the one that holds its prefix).
          prefer: [...this.recent],
        });
      } catch (error) {
        if (storeFault(error)) await this.storeAway();
        else {
          this.o.onError?.(error);
          await this.idle(this.o.idleMs);
        }
        continue;
      }
      this.faults = 0;
      if (!claim) {
        await this.idle(this.o.idleMs);
        continue;
      }
      await this.run(claim);
    }
  }

  /** The store is away (said by its health, not here): waits as its reconnect policy says. */
  private async storeAway(): Promise<void> {
    await this.idle(reconnectWait(this.faults++));
  }

  /** A store call, tried again while the store is away, until it succeeds or the runner stops (then it rejects). */
  private async persist(call: () => Promise<void>): Promise<void> {
    for (;;) {
      try {
        await call();
        this.faults = 0;
        return;
      } catch (error) {
        if (!storeFault(error) || this.stopping.signal.aborted) throw error;
        await this.storeAway();
      }
    }
  }

  /**
   * Lines to claim: as many as run in a quarter of the lease at the recent pace, so a claim ends
   * well before its lease (another runner would take its lines up) however slow the model; one line
   * at first, until the pace is known.
   */
  private claimSize(): number {
    if (this.msPerLine === undefined) return 1;
    const fits = Math.floor(this.o.leaseMs / 4 / Math.max(this.msPerLine, 0.01));
    return Math.max(1, Math.min(this.o.maxItems, fits));
  }

  private async run(claim: ClaimedGroup): Promise<void> {
    const { store, pacer } = this.o;
    const at = this.recent.indexOf(claim.group);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.push(claim.group);
    if (this.recent.length > RECENT_GROUPS) this.recent.shift();
    const lines = claim.items.map((i) => i.line);
    try {
      // The owner's budget must hold what this claim is expected to take (waited for, in slices, since it refills).
      const expected = this.tokensPerLine * claim.items.length;
      for (let wait = pacer?.waitMs(claim.owner, expected) ?? 0; wait > 0; wait = pacer!.waitMs(claim.owner, expected))
        await sleep(Math.min(wait, 1000), undefined, { signal: this.stopping.signal });
      const caller: Caller = {
        signal: this.stopping.signal,
        cacheScope: claim.cacheScope,
        lane: 'batch',
        ...(this.o.allows ? { allows: (name, id) => this.o.allows!(claim.owner, name, id) } : {}),
      };
      const started = performance.now();
      const results = await answerLines(this.o.service, claim.items, caller);
      const perLine = (performance.now() - started) / Math.max(1, claim.items.length);
      this.msPerLine = this.msPerLine === undefined ? perLine : 0.7 * this.msPerLine + 0.3 * perLine;
      // The answers are kept until they are written: a store away now is waited for.
      await this.persist(() => store.complete(claim.batchId, results, Date.now()));
      let tokens = 0;
      for (const r of results) {
        tokens += r.inputTokens;
        this.o.onLine?.({ ok: r.ok, inputTokens: r.inputTokens });
      }
      pacer?.charge(claim.owner, tokens);
      const perLineTokens = tokens / Math.max(1, results.length);
      this.tokensPerLine = this.tokensPerLine === 0 ? perLineTokens : 0.7 * this.tokensPerLine + 0.3 * perLineTokens;
    } catch (error) {
      // Stopping, or the model is not there now: the lines go back, to run again (here or elsewhere).
      // With the store away they stay leased: claimable again when the lease ends (or at the next start).
      await store.release(claim.batchId, lines).catch((e: unknown) => storeFault(e) || this.o.onError?.(e));
      if (!this.stopping.signal.aborted) {
        if (!isTransient(error) && !storeFault(error)) this.o.onError?.(error);
        await this.idle(this.o.idleMs);
      }
    } finally {
      await this.persist(() => store.settle(claim)).catch((e: unknown) => storeFault(e) || this.o.onError?.(e));
    }
  }
}

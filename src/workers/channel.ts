// The one protocol between the project's threads: typed calls (method → argument → result) with
// abort and transfer lists, errors that cross as data, events from the worker, and every pending
// call failing at once when the worker dies. Every worker speaks it: the engine thread, the body
// worker, the graph rewrite and the planner threads (through pool.ts).
import type { MessagePort, Transferable, Worker } from 'node:worker_threads';

/** The calls a worker answers: method → [argument, result]. */
export type CallMap = Record<string, [unknown, unknown]>;

type ToWorker = { t: 'call'; id: number; method: string; arg: unknown } | { t: 'abort'; id: number };
type FromWorker =
  { t: 'ok'; id: number; value: unknown } | { t: 'err'; id: number; error: unknown } | { t: 'event'; event: unknown };

export interface CallOptions {
  /** Aborting sends the worker an abort for this call (its handler's signal fires). */
  signal?: AbortSignal;
  /** Buffers moved to the worker, not copied. */
  transfer?: Transferable[];
}

export interface ChannelOptions<Event> {
  /** The Error a call rejects with, from what the worker's encodeError sent. */
  decodeError(data: unknown): Error;
  onEvent?(event: Event): void;
  /** Keep the process alive only while a call is pending (an idle worker holds nothing open). */
  refWhilePending?: boolean;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** The parent's end of a worker's channel. */
export class WorkerChannel<Calls extends CallMap, Event = never> {
  private next = 0;
  private readonly pending = new Map<number, Pending>();
  private dead: Error | undefined;

  constructor(
    private readonly worker: Worker,
    private readonly o: ChannelOptions<Event>,
  ) {
    if (o.refWhilePending) worker.unref();
    worker.on('message', (m: FromWorker) => this.receive(m));
  }

  /** Calls waiting for the worker's answer. */
  get waiting(): number {
    return this.pending.size;
  }

  call<K extends keyof Calls & string>(method: K, arg: Calls[K][0], options: CallOptions = {}): Promise<Calls[K][1]> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.next++;
    const { signal } = options;
    return new Promise<Calls[K][1]>((resolve, reject) => {
      const abort = (): void => this.worker.postMessage({ t: 'abort', id } satisfies ToWorker);
      const done = (): void => signal?.removeEventListener('abort', abort);
      this.pending.set(id, {
        resolve: (v) => (done(), resolve(v as Calls[K][1])),
        reject: (e) => (done(), reject(e)),
      });
      if (this.o.refWhilePending && this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ t: 'call', id, method, arg } satisfies ToWorker, options.transfer ?? []);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
    });
  }

  /** Posts a message outside the protocol (a test hook): no answer is awaited. */
  postRaw(message: unknown): void {
    this.worker.postMessage(message);
  }

  /** The worker is gone: every pending call, and every later one, fails with `error`. */
  fail(error: Error): void {
    this.dead ??= error;
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const p of calls) p.reject(error);
  }

  private receive(m: FromWorker): void {
    if (m.t === 'event') return this.o.onEvent?.(m.event as Event);
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (this.o.refWhilePending && this.pending.size === 0) this.worker.unref();
    if (m.t === 'ok') p.resolve(m.value);
    else p.reject(this.o.decodeError(m.error));
  }
}

export interface CallContext {
  /** Fires when the caller aborts this call. */
  signal: AbortSignal;
  /** Buffers of the result to move to the caller, not copy. */
  transfer(list: Transferable[]): void;
}

export type Handlers<Calls extends CallMap> = {
  [K in keyof Calls]: (arg: Calls[K][0], ctx: CallContext) => Promise<Calls[K][1]> | Calls[K][1];
};

/** The worker's end: answers calls with `handlers`, errors encoded by `encodeError`; `emit` sends an event. */
export function serveChannel<Calls extends CallMap, Event = never>(
  port: MessagePort,
  handlers: Handlers<Calls>,
  encodeError: (error: unknown) => unknown,
): { emit(event: Event): void } {
  const running = new Map<number, AbortController>();
  port.on('message', (m: ToWorker | { t?: undefined }) => {
    if (m.t === 'abort') return running.get(m.id)?.abort();
    if (m.t !== 'call') return;
    const controller = new AbortController();
    running.set(m.id, controller);
    const transfer: Transferable[] = [];
    const handler = handlers[m.method as keyof Calls];
    void (async () =>
      handler(m.arg as never, { signal: controller.signal, transfer: (list) => transfer.push(...list) }))()
      .then(
        (value) => port.postMessage({ t: 'ok', id: m.id, value } satisfies FromWorker, transfer),
        (error: unknown) => port.postMessage({ t: 'err', id: m.id, error: encodeError(error) } satisfies FromWorker),
      )
      .finally(() => running.delete(m.id));
  });
  return { emit: (event) => port.postMessage({ t: 'event', event } satisfies FromWorker) };
}

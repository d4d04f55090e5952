// Request bodies parsed and validated off the event loop. V8's JSON.parse costs about 0.2 µs a
// container on whichever thread runs it (a 6 MB body of 2,000,000 empty arrays: ~0.5 s, then
// validation walks it and the engine thread and a planner thread each take a structured clone),
// so a body larger than INLINE_BODY_BYTES, or one whose raw nesting could hold content deeper
// than MAX_CONTENT_DEPTH, goes to a worker thread as its bytes (transferred, not copied). The
// worker answers with the body's 422 entries (the same code as the inline path: the same bytes
// out), or with the facts of a valid body and its bytes back; the engine's planner parses a valid
// body again in its own thread (protocol/body.ts). The raw scan that sends deep small bodies there
// stops at the first too-deep container, so it costs next to nothing. A big body is never collected
// on the event loop: it is sent as it arrives (upload()), a chunk at a time over a port of its own,
// each chunk's buffer transferred; the worker puts the chunks together (one copy, in its thread).
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { OnDemandWorker } from '../workers/index.js';
import { ownedBytes, type BodyVerdict } from '../protocol/index.js';
import type { McpChecked } from './mcp-body.js';
import { nestsDeeperThan } from './nesting.js';

export { nestsDeeperThan };

/** How long the body worker waits for another call before it exits (a burst of big bodies leaves its heap large). */
const BODY_WORKER_IDLE_MS = 2_000;

/** A body worker's answer: the verdict, and for a valid body its bytes (transferred back). */
export interface CheckedBody {
  verdict: BodyVerdict;
  bytes?: Uint8Array<ArrayBuffer>;
}

/**
 * A big body's answer: a valid one's facts and bytes, or its 422 body already written as JSON
 * (transferred): its detail can echo megabytes of the body, which the event loop neither clones
 * nor serializes.
 */
export type ReceivedBody = CheckedBody | { refusal: Uint8Array<ArrayBuffer> };

/**
 * The body worker's calls: a body's bytes whole (check), or a body that arrives in chunks over
 * `port` (receive): each message a chunk, then null for the end; `length` the declared size, when known.
 */
export type BodyCalls = {
  check: [Uint8Array<ArrayBuffer>, CheckedBody];
  /** A /mcp message (mcp-body.ts); `defaultModel` is what a tool call without `model` asks. */
  checkMcp: [{ bytes: Uint8Array<ArrayBuffer>; defaultModel: string }, McpChecked];
  /** `mcp`: the body is a /mcp message, answered as checkMcp answers. */
  receive: [{ port: MessagePort; length?: number; mcp?: { defaultModel: string } }, ReceivedBody | McpChecked];
};

/** A body on its way to the body worker, a chunk at a time. */
export interface BodyUpload {
  /** Sends a chunk, transferred (copied first only when it is a slice of a larger buffer); dropped once the upload failed. */
  push(chunk: Uint8Array): void;
  /** The last chunk was sent: the worker's answer (rejected when the worker died meanwhile). */
  end(): Promise<ReceivedBody | McpChecked>;
  /** The body will not be finished (client gone, body refused): the worker drops what it received. */
  abort(): void;
}

/**
 * One worker, started on first use and again after it dies, that parses and validates bodies.
 * Requests it held when it died are rejected (the API answers 503), never parsed here instead.
 */
export class BodyWorker {
  private readonly thread = new OnDemandWorker<BodyCalls>('body-worker-thread', import.meta.url, 'the body worker');
  private pending = 0;
  private idle: NodeJS.Timeout | undefined;

  /** `idleMs`: a worker without calls for this long exits (its heap goes back to the system); the next call starts another. */
  constructor(private readonly idleMs = BODY_WORKER_IDLE_MS) {}

  /** Checks `bytes`; they are transferred to the worker (copied first when they are a slice of a larger buffer). */
  check(bytes: Uint8Array): Promise<CheckedBody> {
    const owned = ownedBytes(bytes);
    return this.track(this.thread.channel().call('check', owned, { transfer: [owned.buffer] }));
  }

  /** Reads a /mcp message's bytes (transferred, as check's). */
  checkMcp(bytes: Uint8Array, defaultModel: string): Promise<McpChecked> {
    const owned = ownedBytes(bytes);
    return this.track(
      this.thread.channel().call('checkMcp', { bytes: owned, defaultModel }, { transfer: [owned.buffer] }),
    );
  }

  /** Starts sending a body of `length` bytes (undefined: not declared) to the worker; `mcp`: a /mcp message. */
  upload(length?: number, mcp?: { defaultModel: string }): BodyUpload {
    const { port1, port2 } = new MessageChannel();
    const controller = new AbortController();
    let open = true;
    const close = (): void => {
      open = false;
      port1.close();
    };
    const answer = this.track(
      this.thread
        .channel()
        .call(
          'receive',
          { port: port2, length, ...(mcp ? { mcp } : {}) },
          { transfer: [port2], signal: controller.signal },
        ),
    );
    answer.then(close, close); // a failure is the caller's, through end()
    return {
      push(chunk) {
        if (!open) return;
        const owned = ownedBytes(chunk);
        port1.postMessage(owned, [owned.buffer]);
      },
      end() {
        if (open) port1.postMessage(null);
        return answer;
      },
      abort() {
        if (!open) return;
        controller.abort();
        close();
        answer.catch(() => {});
      },
    };
  }

  async close(): Promise<void> {
    clearTimeout(this.idle);
    await this.thread.close();
  }

  /** Counts a call in flight; the last one to settle arms the idle exit. */
  private track<T>(call: Promise<T>): Promise<T> {
    this.pending++;
    clearTimeout(this.idle);
    const settled = (): void => {
      if (--this.pending > 0) return;
      this.idle = setTimeout(() => {
        if (this.pending === 0) void this.close();
      }, this.idleMs);
      this.idle.unref();
    };
    call.then(settled, settled);
    return call;
  }
}

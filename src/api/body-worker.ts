// Request bodies parsed and validated off the event loop. V8's JSON.parse costs about 0.2 µs a
// container on whichever thread runs it (a 6 MB body of 2,000,000 empty arrays: ~0.5 s, then
// validation walks it and the engine thread and a planner thread each take a structured clone),
// so a body larger than INLINE_BODY_BYTES, or one whose raw nesting could hold content deeper
// than MAX_CONTENT_DEPTH, goes to a worker thread as its bytes (transferred, not copied). The
// worker answers with the body's 422 entries (the same code as the inline path: the same bytes
// out), or with the facts of a valid body and its bytes back; the engine's planner parses a valid
// body again in its own thread (protocol/body.ts). The raw scan that sends deep small bodies there
// stops at the first too-deep container, so it costs next to nothing.
import type { Worker } from 'node:worker_threads';
import { startWorker, workerEntry, type WorkerChannel } from '../workers/index.js';
import { ownedBytes, type BodyVerdict } from '../protocol/index.js';
import { MAX_CONTENT_DEPTH } from '../protocol/index.js';

/** Raw nesting that no valid body reaches: body (1) + content (64) → a container at 66 may be too deep. */
const RAW_LIMIT = MAX_CONTENT_DEPTH + 1;

/**
 * Whether `text` has a container nested deeper than `limit`, not counting brackets inside strings.
 * Strings are skipped with indexOf (a body is mostly string content), brackets counted one by one.
 */
export function nestsDeeperThan(text: string, limit = RAW_LIMIT): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // To the closing quote: the next one not escaped (preceded by an even number of backslashes).
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** A body worker's answer: the verdict, and for a valid body its bytes (transferred back). */
export interface CheckedBody {
  verdict: BodyVerdict;
  bytes?: Uint8Array<ArrayBuffer>;
}

/** The body worker's one call. */
export type BodyCalls = { check: [Uint8Array<ArrayBuffer>, CheckedBody] };

/**
 * One worker, started on first use and again after it dies, that parses and validates bodies.
 * Requests it held when it died are rejected (the API answers 503), never parsed here instead.
 */
export class BodyWorker {
  private worker: Worker | undefined;
  private channel: WorkerChannel<BodyCalls> | undefined;

  /** Checks `bytes`; they are transferred to the worker (copied first when they are a slice of a larger buffer). */
  check(bytes: Uint8Array): Promise<CheckedBody> {
    const owned = ownedBytes(bytes);
    return this.start().call('check', owned, { transfer: [owned.buffer] });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.channel = undefined;
    if (w) await w.terminate();
  }

  private start(): WorkerChannel<BodyCalls> {
    if (this.channel) return this.channel;
    const entry = workerEntry('body-worker-thread', import.meta.url);
    const { worker, channel } = startWorker<BodyCalls>(
      entry.filename,
      { workerData: entry.workerData },
      {
        name: 'the body worker',
        decodeError: (m) => new Error(String(m)),
        refWhilePending: true,
        onDeath: () => {
          if (this.worker === worker) [this.worker, this.channel] = [undefined, undefined];
        },
      },
    );
    [this.worker, this.channel] = [worker, channel];
    return channel;
  }
}

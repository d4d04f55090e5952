// Bodies nested deeper than any valid request are checked off the event loop. V8's JSON.parse costs
// about 0.2 µs a container on whichever thread runs it (a 2 MB body of 1,000,000 nested arrays:
// ~0.2 s), so a body whose raw nesting could hold content deeper than MAX_CONTENT_DEPTH is parsed
// and depth-checked in a worker thread, which sends back only the 422 entry (or "fine"). The raw
// scan that decides this stops at the first too-deep container, so it costs next to nothing.
import { Worker } from 'node:worker_threads';
import { workerExecArgv, workerFile } from '../engine/worker-args.js';
import { MAX_CONTENT_DEPTH } from '../protocol/depth.js';
import type { ValidationError } from '../protocol/schemas.js';

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

export type DeepBodyVerdict = { detail: ValidationError[] } | { invalidJson: true };

/** One worker, started on first use, that parses deep bodies and returns their depth verdict. */
export class DeepBodyChecker {
  private worker: Worker | undefined;
  private next = 0;
  private readonly pending = new Map<number, { resolve: (v: DeepBodyVerdict) => void; reject: (e: Error) => void }>();

  check(text: string): Promise<DeepBodyVerdict> {
    const worker = this.start();
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, text });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerFile('deep-body-worker', import.meta.url), { execArgv: workerExecArgv() });
    worker.unref();
    worker.on('message', (m: { id: number } & DeepBodyVerdict) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      p?.resolve(m);
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the deep-body worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }
}

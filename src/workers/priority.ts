// Background threads: a thread that does only batch work (a batch job's planning, reading in an
// upload, the batch store) lowers its own scheduling priority, so on cores busy with interactive
// requests the kernel runs it only in the time they leave. Linux schedules threads, and a thread's
// nice value is its own: setpriority(2) on the thread's id changes that thread alone. Elsewhere (or
// without /proc) it is a no-op: the thread runs at the process's priority, as before.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The nice value of a background thread: the lowest priority (Linux gives it ~1.5% of a core against a nice-0 thread). */
export const BACKGROUND_NICE = 19;

/** This thread's kernel id (Linux), from /proc/thread-self → `<pid>/task/<tid>`; undefined elsewhere. */
export function threadId(): number | undefined {
  try {
    const tid = Number(/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'))?.[1]);
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Lowers the calling thread's priority to BACKGROUND_NICE (call it at the start of a worker thread,
 * never on the main thread: it would lower the server). Returns whether it did.
 */
export function runInBackground(): boolean {
  if (process.platform !== 'linux') return false;
  const tid = threadId();
  if (tid === undefined || tid === process.pid) return false;
  try {
    setPriority(tid, BACKGROUND_NICE);
    return true;
  } catch {
    return false;
  }
}

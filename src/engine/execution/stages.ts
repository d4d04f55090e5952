// A request's stages inside the engine, timed for tracing when the caller asks (EvaluateOptions.trace):
// planning, the wait for its turn, each engine pass, the readout. The engine runs in its own thread,
// where no tracer lives: the stages travel back with the result as plain records (names, wall-clock
// times, token counts; never content), and the caller's side makes them spans under the request's
// span (service/tracing.ts). One exporter, and a parent that cannot be lost on the way.
import type { StageSpan } from '../types.js';

/** Wall-clock milliseconds, sub-millisecond, comparable across the process's threads. */
const now = () => performance.timeOrigin + performance.now();

export class StageRecorder {
  readonly spans: StageSpan[] = [];
  now = now;

  /** Records `name` from `start` (a now()) to now. */
  mark(name: StageSpan['name'], start: number, tokens?: number): void {
    this.spans.push({ name, start, end: now(), ...(tokens === undefined ? {} : { tokens }) });
  }

  /** Times `work` as `name`. */
  async time<T>(name: StageSpan['name'], work: () => Promise<T>, tokens?: number): Promise<T> {
    const start = now();
    try {
      return await work();
    } finally {
      this.mark(name, start, tokens);
    }
  }
}

// Runs every line of a dataset on a target, with a progress bar on stderr; a server (--url) gets a
// few lines at once, so its batching and queue see a realistic load.
import type { SystemOneResponse } from '../../protocol/index.js';
import type { Io } from '../common.js';
import { progressBar } from '../progress.js';
import type { DatasetLine } from './read.js';
import type { Target } from './target.js';

export interface DatasetRun {
  target: Target;
  /** One response per line, in the dataset's order. */
  responses: SystemOneResponse[];
  inputTokens: number;
  seconds: number;
}

export async function runDataset(target: Target, lines: DatasetLine[], io: Io, concurrency = 1): Promise<DatasetRun> {
  const started = performance.now();
  const bar = progressBar({ write: (t) => io.err(t), isTTY: io.errIsTTY });
  const responses: SystemOneResponse[] = new Array<SystemOneResponse>(lines.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < lines.length) {
      const i = next++;
      responses[i] = await target.evaluate(lines[i]!);
      done++;
      bar.update(
        done,
        lines.length,
        (s) => `${done}/${lines.length} lines ${target.label} ${s > 0 ? (done / s).toFixed(1) : '–'} lines/s`,
      );
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, lines.length)) }, worker));
  } finally {
    bar.done();
  }
  return {
    target,
    responses,
    inputTokens: responses.reduce((n, r) => n + r.usage.input_tokens, 0),
    seconds: (performance.now() - started) / 1000,
  };
}

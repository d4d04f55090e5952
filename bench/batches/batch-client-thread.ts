// The batch bench's batch client in a thread of its own (runBatchApart in clients.ts): it submits
// the batch and reads its results as runBatch does, on its own event loop, as a separate client
// would; told its lines, key and the server's URL, it posts { submitted } once the batch is
// accepted, then { run } (the BatchRun) or { error }. It runs at the lowest priority (nice 19), as a
// background job would: on the bench's two cores, shared with the server, its reading of 10,000-line
// result pages would otherwise take the cores from the server and from the interactive client it
// measures, where a batch's real client runs on another machine.
import { parentPort, workerData } from 'node:worker_threads';
import { runInBackground } from '../../src/internal.js';
import type { BenchServer } from '../lib/server.js';
import { runBatch } from './clients.js';
import type { Line } from './corpus.js';

runInBackground();
const data = workerData as { url: string; key: string; lines: Line[]; sampled: string[] };
try {
  const run = await runBatch({ url: data.url } as BenchServer, data.key, data.lines, new Set(data.sampled), () =>
    parentPort!.postMessage({ submitted: true }),
  );
  parentPort!.postMessage({ run });
} catch (error) {
  parentPort!.postMessage({ error: String((error as Error).stack ?? error) });
}

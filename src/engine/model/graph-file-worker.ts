// Worker thread of the graph rewrite (graph-file.ts): reading, decoding and re-encoding a model
// file is heavy and synchronous, and its buffers are freed with the thread, before onnxruntime
// loads the result.
import { parentPort } from 'node:worker_threads';
import { serveChannel } from '../../workers/index.js';
import { writeRewrittenGraph, type GraphFileCalls } from './graph-file.js';

serveChannel<GraphFileCalls>(
  parentPort!,
  {
    rewrite: async ({ folder, vocab, options }) => (await writeRewrittenGraph(folder, vocab, options)) ?? null,
  },
  (error) => (error instanceof Error ? error.message : String(error)),
);

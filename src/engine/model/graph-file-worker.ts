// Worker thread entry of the graph rewrite (graph-file.ts): reading, decoding and re-encoding a
// model file is heavy and synchronous, and its buffers are freed with the thread, before
// onnxruntime loads the result.
import { parentPort, workerData } from 'node:worker_threads';
import { writeRewrittenGraph } from './graph-file.js';
import type { ModelFolder } from './model-folder.js';

const { folder, vocab, cacheDir } = workerData as { folder: ModelFolder; vocab: number; cacheDir?: string };
writeRewrittenGraph(folder, vocab, cacheDir).then(
  (graph) => parentPort!.postMessage({ graph }),
  (error: Error) => parentPort!.postMessage({ error: error.message }),
);

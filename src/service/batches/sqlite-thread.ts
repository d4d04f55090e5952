// The SQLite batch store's worker thread (sqlite-store.ts): opens the file in the data directory its
// data names, then answers each store call with the synchronous store (sqlite-batches.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { runInBackground, serveChannel } from '../../workers/index.js';
import { SqliteBatches } from './sqlite-batches.js';
import { encodeStoreError, type SqliteCalls } from './sqlite-calls.js';

// Batch work only: it runs in the time interactive requests leave.
runInBackground();
const { dataDir } = workerData as { dataDir: string };
let store: SqliteBatches | undefined;

function opened(): SqliteBatches {
  store ??= new SqliteBatches(dataDir);
  return store;
}

serveChannel<SqliteCalls>(
  parentPort!,
  {
    open: () => void opened(),
    close: () => {
      store?.close();
      store = undefined;
    },
    call: ({ method, args }) => (opened()[method] as (...a: unknown[]) => unknown)(...args) as never,
  },
  encodeStoreError,
);

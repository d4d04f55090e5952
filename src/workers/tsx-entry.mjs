// The one entry of every worker thread started from TypeScript sources (workers.ts start.ts): it
// registers tsx in this thread, then loads the worker's source that its data names.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.__assayTsEntry);

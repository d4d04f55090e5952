// Batch jobs (docs/batches.md): the service behind /v1/batches and `assay batch`.
export * from './batches.js';
export * from './errors.js';
export { BATCH_ENDPOINT, MAX_CUSTOM_ID } from './lines.js';
export type { BatchPacer } from './runner.js';
export type { BatchError, BatchRecord, BatchStatus, BatchStore, ResultsPage } from './store.js';
export * from './open.js';

// Batch jobs (docs/batches.md): the service behind /v1/batches and `assay batch`, and its store
// (an embedded SQLite file, or PostgreSQL shared by replicas with pg-boss as the queue; the
// PostgreSQL store is loaded only where a queue URL names it: open.ts).
export * from './batches.js';
export * from './errors.js';
export * from './open.js';
export { BATCH_ENDPOINT, MAX_CUSTOM_ID } from './lines.js';
export type { BatchPacer } from './runner.js';
export * from './store.js';
export { diskFull, storeFault, type BatchStoreStatus, type StoreState } from './store-health.js';
export { BatchCursorError } from './schema.js';
export { openSqliteStore, SqliteBatchStore, type SqliteStoreOptions } from './sqlite-store.js';
export type { PgBatchStore, PgStoreOptions } from './pg-store.js';

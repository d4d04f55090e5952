// Batch jobs: the store (an embedded SQLite file, or PostgreSQL shared by replicas with pg-boss as
// the queue) behind one interface.
export * from './store.js';
export { BatchCursorError } from './schema.js';
export { openSqliteStore, SqliteBatchStore, type SqliteStoreOptions } from './sqlite-store.js';
export { openPgStore, PgBatchStore, type PgStoreOptions } from './pg-store.js';

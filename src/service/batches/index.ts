// Batch jobs: the store (an embedded SQLite file) behind one interface.
export * from './store.js';
export { BatchCursorError } from './schema.js';
export { openSqliteStore, SqliteBatchStore, type SqliteStoreOptions } from './sqlite-store.js';

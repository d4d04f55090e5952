// What the SQLite batch store's thread answers (sqlite-thread.ts): the store's methods, synchronous
// (SyncStore, which sqlite-batches.ts implements), and how its errors cross: a bad results cursor
// stays a BatchCursorError, any other error keeps its message.
import { BatchCursorError } from './schema.js';
import type { BatchStore } from './store.js';

/** The store's methods, synchronous, as the worker serves them. */
export type SyncStore = {
  [K in Exclude<keyof BatchStore, 'close' | 'healthy'>]: (
    ...args: Parameters<BatchStore[K]>
  ) => Awaited<ReturnType<BatchStore[K]>>;
};

/** The store's file in the data directory. */
export const SQLITE_FILE = 'batches.sqlite';

/** One store method and its arguments. */
export type StoreCall = {
  [K in keyof SyncStore]: { method: K; args: Parameters<SyncStore[K]> };
}[keyof SyncStore];

export type SqliteCalls = {
  /** Opens the file (creates the schema): fails when the data directory is not writable. */
  open: [undefined, void];
  call: [StoreCall, unknown];
  close: [undefined, void];
};

export function encodeStoreError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

export function decodeStoreError(data: unknown): Error {
  const { name, message } = data as { name: string; message: string };
  if (name === 'BatchCursorError') {
    const e = new BatchCursorError('');
    e.message = message;
    return e;
  }
  const e = new Error(message);
  e.name = name;
  return e;
}

// Opening batch jobs at startup: the store (the embedded SQLite file in the data directory, or the
// PostgreSQL database replicas share), the service on it. A data directory that cannot be written
// or a store that cannot open turns batches off with its reason (the routes answer 503 with it);
// the server still serves single requests. A PostgreSQL that cannot be reached at startup is not a
// store that cannot open: the replica connects once it is back.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { Batches, type BatchSettings } from './batches.js';
import { BatchStoreUnavailableError } from './errors.js';
import { openSqliteStore } from './sqlite-store.js';
import { storeFault } from './store-health.js';
import type { BatchStore } from './store.js';

export interface OpenBatchesOptions {
  /** Unset: $XDG_DATA_HOME/assay or ~/.local/share/assay. */
  dataDir?: string;
  /** postgres://…: the store replicas share. */
  queueUrl?: string;
  /** This replica's name (leases, the queue's affinity); default host name and pid. */
  replicaId?: string;
  maxLines: number;
  maxBytes: number;
  windowMs: number;
  keepMs: number;
  keepReadMs: number;
  /** How long a claim of lines is held before another runner may take its lines up. */
  leaseMs: number;
}

/** The data directory when none is set. */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_DATA_HOME ? resolve(env.XDG_DATA_HOME) : join(homedir(), '.local', 'share');
  return join(base, 'assay');
}

/**
 * The PostgreSQL store; where the database cannot be reached now (stopped, restarting, not up yet),
 * one that opens at the first call that finds it (pg-later.ts), so the replica takes batches once
 * it is back. A refusal (a wrong password, a bad URL) still turns batches off, with its reason.
 */
async function openPg(options: { url: string; replicaId: string }): Promise<BatchStore> {
  const { openPgStore } = await import('./pg-store.js');
  try {
    return await openPgStore(options);
  } catch (e) {
    if (!(storeFault((e as Error).cause) instanceof BatchStoreUnavailableError)) throw e;
    return new (await import('./pg-later.js')).PgStoreLater(options);
  }
}

/** Lines a runner claims at once, and how many claims run at once. */
const RUNNER = { maxItems: 64, concurrency: 2, idleMs: 500 };

export async function openBatches(o: OpenBatchesOptions): Promise<{ batches: Batches } | { unavailable: string }> {
  const dataDir = o.dataDir ?? defaultDataDir();
  try {
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.W_OK);
  } catch (error) {
    return { unavailable: `the data directory ${dataDir} cannot be written (${(error as Error).message})` };
  }
  const runnerId = o.replicaId ?? `${hostname()}-${process.pid}`;
  let store;
  try {
    // The PostgreSQL client and pg-boss load only where a queue is named.
    store = o.queueUrl ? await openPg({ url: o.queueUrl, replicaId: runnerId }) : await openSqliteStore({ dataDir });
  } catch (error) {
    return { unavailable: `the batch store cannot open: ${(error as Error).message}` };
  }
  const settings: BatchSettings = {
    dataDir,
    maxLines: o.maxLines,
    maxBytes: o.maxBytes,
    windowMs: o.windowMs,
    keepMs: o.keepMs,
    keepReadMs: o.keepReadMs,
    sweepMs: Math.max(1000, Math.min(60_000, o.keepReadMs / 4)),
    runner: { runnerId, leaseMs: o.leaseMs, ...RUNNER },
  };
  return { batches: new Batches(store, settings) };
}

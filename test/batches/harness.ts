// The two batch stores behind one harness for the conformance suite (store.test.ts): each test gets
// a store of its own (a fresh data directory, a fresh PostgreSQL database), a way to open a second
// one on the same data (a restart, another replica), and everything the store keeps at rest as
// text, to look for content that must be gone.
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openSqliteStore, type BatchStore } from '../../src/service/batches/index.js';
import { openPgStore } from '../../src/service/batches/pg-store.js';
import { startPostgres, type Postgres } from '../helpers/postgres.js';

export interface Harness {
  store: BatchStore;
  /** Another store on the same data (a restart, another replica). */
  another(): Promise<BatchStore>;
  /** What the store keeps at rest, as text (the SQLite files' bytes; PostgreSQL's rows). */
  atRest(): Promise<string>;
  /** PostgreSQL only: the state of a pg-boss job. */
  jobState(id: string): Promise<string>;
  close(): Promise<void>;
}

export interface Engine {
  name: 'sqlite' | 'pg';
  /** Why the engine cannot run here, if it cannot. */
  missing?: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  open(): Promise<Harness>;
}

export function sqliteEngine(): Engine {
  return {
    name: 'sqlite',
    async setup() {},
    async teardown() {},
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'assay-batches-'));
      const stores: BatchStore[] = [];
      const open = async (): Promise<BatchStore> => {
        const s = await openSqliteStore({ dataDir: dir });
        stores.push(s);
        return s;
      };
      return {
        store: await open(),
        another: open,
        async atRest() {
          return ['batches.sqlite', 'batches.sqlite-wal', 'batches.sqlite-journal']
            .map((f) => join(dir, f))
            .filter((f) => existsSync(f))
            .map((f) => readFileSync(f).toString('latin1'))
            .join('\n');
        },
        jobState: () => Promise.reject(new Error('no queue on SQLite')),
        async close() {
          for (const s of stores) await s.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

export function pgEngine(missing: string | undefined): Engine {
  let server: Postgres | undefined;
  let n = 0;
  return {
    name: 'pg',
    missing,
    async setup() {
      server = await startPostgres();
    },
    async teardown() {
      await server?.stop();
    },
    async open() {
      const name = `t${++n}`;
      const admin = new pg.Client({ connectionString: server!.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = server!.url.replace('/postgres?', `/${name}?`);
      const stores: BatchStore[] = [];
      let replicas = 0;
      const open = async (): Promise<BatchStore> => {
        const s = await openPgStore({ url, replicaId: `r${++replicas}`, maintenanceIntervalSeconds: 1 });
        stores.push(s);
        return s;
      };
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return {
        store: await open(),
        another: open,
        async atRest() {
          const tables = ['batches', 'items', 'results', 'pgboss.job', 'pgboss.archive'];
          const parts = [];
          for (const t of tables)
            parts.push((await client.query(`SELECT t::text AS row FROM ${t} t`)).rows.map((r) => r.row));
          return parts.flat().join('\n');
        },
        async jobState(id) {
          const { rows } = await client.query('SELECT state FROM pgboss.job WHERE id = $1', [id]);
          return (rows[0]?.state as string | undefined) ?? 'gone';
        },
        async close() {
          await client.end();
          for (const s of stores) await s.close().catch(() => undefined);
        },
      };
    },
  };
}

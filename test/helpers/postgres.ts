// A throwaway PostgreSQL cluster for tests: Debian's initdb and pg_ctl in a temporary directory, a
// free port, its unix socket in that directory, no TCP. PostgreSQL refuses to run as root, so as
// root (here and in CI) the cluster belongs to the `postgres` user and its commands run through
// runuser. `postgresBinDir()` is undefined where no PostgreSQL is installed (the tests then skip,
// saying why); .ci/run installs it.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The newest installed PostgreSQL's bin directory, or undefined. */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

export interface Postgres {
  /** A connection string over the cluster's unix socket, as the superuser `postgres`. */
  url: string;
  dir: string;
  /** Stops the server as an operator's restart does (`pg_ctl stop -m fast`: sessions are cut), keeping its data. */
  halt(): Promise<void>;
  /** Starts it again on the same port and data after halt(). */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a cluster (initdb, pg_ctl start -w); stop() removes it. */
export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'assay-pg-'));
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]): void => {
    const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses= -c fsync=off -c full_page_writes=off`;
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  start();
  return {
    url: `postgresql://postgres@/postgres?host=${encodeURIComponent(dir)}&port=${port}`,
    dir,
    async halt() {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    async resume() {
      start();
    },
    async stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already stopped (a test that halted it failed before resuming it).
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

// A database outage for tests: the cluster of startPostgres() (postgres.ts) stopped and started
// again on the same data directory and port, so clients that reconnect find it where it was.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { postgresBinDir, type Postgres } from './postgres.js';

function pgCtl(pg: Postgres, args: string[]): void {
  const bin = postgresBinDir()!;
  const root = process.getuid?.() === 0;
  const cmd = join(bin, 'pg_ctl');
  const [file, argv] = root ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: pg.dir });
}

/** Stops the server at once (connections cut), keeping its data. */
export function stopPostgres(pg: Postgres): void {
  pgCtl(pg, ['-D', join(pg.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
}

/** Starts it again where it was (the port and socket directory of its url). */
export function restartPostgres(pg: Postgres): void {
  const port = /[?&]port=(\d+)/.exec(pg.url)![1]!;
  const options = `-p ${port} -k ${pg.dir} -c listen_addresses= -c fsync=off -c full_page_writes=off`;
  pgCtl(pg, ['-D', join(pg.dir, 'data'), '-o', options, '-l', join(pg.dir, 'log'), '-w', '-t', '60', 'start']);
}

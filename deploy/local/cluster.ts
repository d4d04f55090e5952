// A scale-out cluster on one machine: N `assay serve` replicas (each its own process, port and
// replica id) behind Debian's nginx, configured by deploy/local/routing.ts with the same routing
// rules as the Kubernetes ingress. What ingress-nginx gets from readiness probes, the harness does
// itself: it polls every replica's /healthz and takes a replica that fails out of the upstream (and
// back in when it answers again) by rewriting nginx.conf and reloading nginx (SIGHUP).
//
// Used by the routing tests (test/deploy/scaleout.test.ts) and the bench (`npm run bench -- --only
// scaleout`). By hand, after `npm run build`:
//   npx tsx deploy/local/cluster.ts [--replicas 3] [--port 8080] [--round-robin]
// then send requests to http://127.0.0.1:8080 with the key it prints.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nginxConf, type NginxOptions } from './routing.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** nginx on this machine, or undefined (Debian: apt-get install nginx-light). */
export function findNginx(): string | undefined {
  for (const candidate of [process.env.NGINX, '/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx']) {
    if (candidate && spawnSync(candidate, ['-v']).status === 0) return candidate;
  }
  return undefined;
}

/** A free TCP port on loopback (taken and released: another process could take it first, rarely). */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolvePort(port));
    });
  });
}

export interface Replica {
  id: string;
  port: number;
  process: ChildProcess;
  /** Whether it is in nginx's rotation now (its last health check passed). */
  inRotation: boolean;
}

export interface ClusterOptions {
  /** The model folder every replica serves (as svc-1.13.0, alias svc-latest). */
  modelDir: string;
  replicas?: number;
  balance?: NginxOptions['balance'];
  /** The proxy's port (default: a free one). */
  port?: number;
  /** API key every replica accepts. */
  key: string;
  threadsPerReplica?: number;
  /** How often each replica's /healthz is polled. */
  healthIntervalMs?: number;
  /** More `assay serve` flags for every replica. */
  serveArgs?: string[];
}

export interface Cluster {
  url: string;
  replicas: Replica[];
  /** Resolves once nginx routes to exactly the replicas whose ids are given. */
  waitForRotation(ids: string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Polls `url`/healthz until it answers 200 (and `ours` accepts the answer). */
async function waitForHealth(
  url: string,
  timeoutMs: number,
  ours: (res: Response) => boolean = () => true,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => r.ok && ours(r),
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become healthy within ${timeoutMs} ms`);
}

export async function startCluster(o: ClusterOptions): Promise<Cluster> {
  const nginx = findNginx();
  if (!nginx) throw new Error('nginx is not installed (Debian: apt-get install nginx-light)');
  const prefix = mkdtempSync(join(tmpdir(), 'assay-cluster-'));
  // nginx's workers drop root privileges: they must reach the prefix and write its temp folders.
  chmodSync(prefix, 0o755);
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) {
    mkdirSync(join(prefix, d));
    chmodSync(join(prefix, d), 0o777);
  }
  const registry = join(prefix, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-1.13.0',
      models: { 'svc-1.13.0': { path: o.modelDir, description: 'scale-out replica', release_date: '2026-11-22' } },
      aliases: { 'svc-latest': 'svc-1.13.0' },
    }),
  );

  const replicas: Replica[] = [];
  const startReplica = async (i: number): Promise<Replica> => {
    const port = await freePort();
    const id = `r${i + 1}`;
    const args = [
      'bin/assay.js',
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--registry',
      registry,
      '--threads',
      String(o.threadsPerReplica ?? 1),
      '--replica-id',
      id,
      '--log-level',
      'warn',
      // Each replica's own data directory (batch uploads being read in; the embedded store).
      '--data-dir',
      join(prefix, `data-${id}`),
      ...(o.serveArgs ?? []),
    ];
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ASSAY_API_KEYS: o.key },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitForHealth(`http://127.0.0.1:${port}`, 120_000);
    return { id, port, process: child, inRotation: true };
  };
  try {
    for (let i = 0; i < (o.replicas ?? 3); i++) replicas.push(await startReplica(i));
  } catch (error) {
    for (const r of replicas) r.process.kill('SIGKILL');
    throw error;
  }

  const port = o.port ?? (await freePort());
  const confFile = join(prefix, 'nginx.conf');
  const writeConf = () =>
    writeFileSync(
      confFile,
      nginxConf({
        listen: port,
        prefix,
        balance: o.balance ?? 'hash',
        upstreams: replicas.map((r) => ({ host: '127.0.0.1', port: r.port, down: !r.inRotation })),
      }),
    );
  writeConf();
  const proxy = spawn(nginx, ['-p', prefix, '-c', confFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  // Ready when a replica answers through the proxy (it names itself): another server already on the
  // port answers /healthz too, without the header, while nginx fails to bind and exits.
  const exited = new Promise<never>((_, reject) =>
    proxy.once('exit', (code) =>
      reject(new Error(`nginx exited (code ${code}) before it answered on ${url}: is port ${port} taken?`)),
    ),
  );
  try {
    await Promise.race([waitForHealth(url, 30_000, (r) => r.headers.has('x-assay-replica')), exited]);
  } catch (error) {
    proxy.kill('SIGKILL');
    for (const r of replicas) r.process.kill('SIGKILL');
    throw error;
  }
  exited.catch(() => {}); // a later exit is stop()'s

  // The readiness probes: a replica that fails one check leaves the rotation, one that passes returns.
  let stopped = false;
  const check = async (r: Replica) =>
    fetch(`http://127.0.0.1:${r.port}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
      (res) => res.ok,
      () => false,
    );
  const healthLoop = (async () => {
    while (!stopped) {
      const results = await Promise.all(replicas.map(check));
      let changed = false;
      replicas.forEach((r, i) => {
        if (r.inRotation !== results[i]) {
          r.inRotation = results[i]!;
          changed = true;
        }
      });
      if (changed && !stopped && replicas.some((r) => r.inRotation)) {
        writeConf();
        proxy.kill('SIGHUP');
      }
      await new Promise((r) => setTimeout(r, o.healthIntervalMs ?? 250));
    }
  })();

  return {
    url,
    replicas,
    async waitForRotation(ids, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      const want = [...ids].sort().join(',');
      while (
        replicas
          .filter((r) => r.inRotation)
          .map((r) => r.id)
          .sort()
          .join(',') !== want
      ) {
        if (Date.now() > until) throw new Error(`rotation did not become [${want}]`);
        await new Promise((r) => setTimeout(r, 50));
      }
      // nginx reloads by starting new workers; give the old ones a moment to hand over.
      await new Promise((r) => setTimeout(r, 500));
    },
    async stop() {
      stopped = true;
      await healthLoop;
      const exited = new Promise((r) => proxy.once('exit', r));
      proxy.kill('SIGQUIT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      proxy.kill('SIGKILL');
      for (const r of replicas) r.process.kill('SIGKILL');
    },
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const { ensureSynthModel } = await import('../../src/internal.js');
  const key = process.env.ASSAY_API_KEYS?.split(',')[0] ?? `local-${Math.random().toString(36).slice(2, 12)}`;
  const cluster = await startCluster({
    modelDir: await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }),
    replicas: Number(option('--replicas') ?? 3),
    port: Number(option('--port') ?? 8080),
    balance: args.includes('--round-robin') ? 'round-robin' : 'hash',
    key,
  });
  process.stdout.write(
    `nginx on ${cluster.url} in front of ${cluster.replicas.map((r) => `${r.id} (:${r.port})`).join(', ')}; key: ${key}\nCtrl-C stops all.\n`,
  );
  process.once('SIGINT', () => void cluster.stop().then(() => process.exit(0)));
}

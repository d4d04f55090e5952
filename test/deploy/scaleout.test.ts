// Replicas behind a real proxy: three `assay serve` processes (tiny model, one thread each) behind
// Debian's nginx with the routing rules of the ingress (deploy/local/routing.ts), over real sockets.
// Each replica names itself in x-assay-replica (--replica-id, an operator setting). The client SDK
// sends x-assay-state-hash by default; curl-like callers send no header.
import { createHash } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AssayClient } from '../../src/client/index.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { findNginx, startCluster, type Cluster } from '../../deploy/local/cluster.js';

const KEY = 'scaleout-test-key';
const nginx = findNginx();
if (!nginx)
  console.warn(
    '\n  !! nginx is not installed: the scale-out tests are SKIPPED (apt-get install nginx-light; .ci/run installs it)\n',
  );

const question = { paid: { type: 'noul' as const, instructions: 'Was the invoice paid?' } };
const states = Array.from({ length: 24 }, (_, i) => `Invoice ${i}: the customer paid ${i * 7} euros on time.`);

type Questions = Record<string, { type: 'noul'; instructions: string }>;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The SDK against the proxy, recording which replica answered each call. */
function sdk(cluster: Cluster) {
  let last = '';
  const client = new AssayClient({
    baseUrl: cluster.url,
    apiKey: KEY,
    model: 'svc-latest',
    maxRetries: 0,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      last = res.headers.get('x-assay-replica') ?? '';
      return res;
    },
  });
  /** `routeAs`: send the state-hash header of that state instead (nginx places hashes by the replicas' ports). */
  return async (state: string, questions: Questions = question, routeAs?: string) => {
    const headers = routeAs ? { 'x-assay-state-hash': sha256(JSON.stringify(routeAs)) } : undefined;
    await client.evaluate({ state, questions }, { headers });
    return last;
  };
}

/** A request as curl sends it: no state-hash header. */
async function plain(cluster: Cluster, state: string): Promise<{ status: number; replica: string }> {
  const res = await fetch(`${cluster.url}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ state, model: 'svc-latest', questions: question }),
  });
  await res.arrayBuffer();
  return { status: res.status, replica: res.headers.get('x-assay-replica') ?? '' };
}

/** How many requests a replica has in flight on the evaluate route (its own /metrics, not through nginx). */
async function inFlightAt(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(/^assay_http_requests_in_flight\{route="\/v1\/systemone"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

describe.skipIf(!nginx)('three replicas behind nginx', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({
      modelDir: await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }),
      replicas: 3,
      key: KEY,
      // The recipe for a proxy in front: the public name allowed (docs/operations.md).
      serveArgs: ['--allowed-hosts', 'assay.example.com'],
    });
  }, 180_000);
  afterAll(() => cluster?.stop());

  let home: Map<string, string>;

  it('the same state always reaches the same replica, and the states spread over all three', async () => {
    const ask = sdk(cluster);
    home = new Map();
    for (const s of states) home.set(s, await ask(s));
    for (let round = 0; round < 2; round++) for (const s of states) expect(await ask(s), s).toBe(home.get(s));
    expect(new Set(home.values())).toEqual(new Set(['r1', 'r2', 'r3']));
  });

  it('requests without the header spread over all replicas (not piled onto one)', async () => {
    const seen: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const { status, replica } = await plain(cluster, states[0]!);
      expect(status).toBe(200);
      seen[replica] = (seen[replica] ?? 0) + 1;
    }
    expect(Object.keys(seen).sort(), JSON.stringify(seen)).toEqual(['r1', 'r2', 'r3']);
  });

  it('the proxy passes the Host on: a rebinding name is refused by the replica, the allowed public name answered', async () => {
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const { hostname, port } = new URL(cluster.url);
        const req = request(
          { hostname, port, path: '/v1/models', headers: { host, authorization: `Bearer ${KEY}` } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end();
      });
    for (let i = 0; i < 6; i++) {
      expect(await status('attacker.example')).toBe(403);
      expect(await status('assay.example.com')).toBe(200);
    }
  });

  it('a stopped replica gets no traffic once its health check fails; its states move, the others stay', async () => {
    const ask = sdk(cluster);
    const victim = cluster.replicas.find((r) => r.id === 'r2')!;
    victim.process.kill('SIGKILL');
    await cluster.waitForRotation(['r1', 'r3']);
    for (const s of states) {
      const now = await ask(s);
      expect(now).not.toBe('r2');
      if (home.get(s) !== 'r2') expect(now, s).toBe(home.get(s));
    }
    for (let i = 0; i < 10; i++) expect((await plain(cluster, states[1]!)).replica).not.toBe('r2');
  });

  it('a replica drained with SIGTERM finishes its in-flight request; the next ones go elsewhere', async () => {
    const ask = sdk(cluster);
    const target = cluster.replicas.find((r) => r.id === 'r3')!;
    const state = states.find((s) => home.get(s) === 'r3')!;
    // A long state and many questions, routed as `state` is: the request stays in r3's engine for
    // seconds, so the signal goes while it is in flight there (its /metrics says so).
    const long = `${state} ${'The customer asked about the invoice again and again. '.repeat(1_500)}`;
    const many = Object.fromEntries(
      Array.from({ length: 32 }, (_, i) => [
        `q${i}`,
        { type: 'noul' as const, instructions: `Was invoice part ${i} paid?` },
      ]),
    );
    let settled = false;
    const inFlight = ask(long, many, state).finally(() => (settled = true));
    inFlight.catch(() => {}); // awaited below; a failure there fails the test
    const end = Date.now() + 60_000;
    while ((await inFlightAt(target.port)) === 0) {
      // Seen finished (or failed) before it was seen in flight: the test would prove nothing.
      if (settled) throw new Error(`the request ended before r3 had it in flight: ${await inFlight}`);
      if (Date.now() > end) throw new Error('the request never reached r3');
      await new Promise((r) => setTimeout(r, 10));
    }
    target.process.kill('SIGTERM');
    expect(await inFlight).toBe('r3'); // answered (200: the SDK would throw otherwise) by the draining replica
    await cluster.waitForRotation(['r1']);
    expect(await ask(state)).toBe('r1');
  });
});

describe.skipIf(!nginx)('the cluster harness, as a person runs it', () => {
  it('a proxy port another server already answers on: it stops naming the port, not "nginx on …"', async () => {
    // Another server on the port, answering /healthz 200 (as another Assay would): nginx cannot bind.
    const other = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const port = (other.address() as AddressInfo).port;
    try {
      await expect(
        startCluster({
          modelDir: await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }),
          replicas: 1,
          port,
          key: KEY,
        }),
      ).rejects.toThrow(`is port ${port} taken?`);
    } finally {
      other.close();
    }
  }, 120_000);
});

// Fault: slow and hostile clients. 1,000 connections trickling their headers a byte a second;
// 1,000 idle keep-alive sockets; a client reading its (large) response a byte a second; a body
// uploaded at 1 KB/s towards the size limit. The server closes each by its own timeouts
// (--headers-timeout-ms, --keep-alive-timeout-ms, --send-timeout-ms, --request-timeout-ms: set
// short here so the test takes seconds, not minutes), answers what it answers with a JSON error,
// and its file descriptors and memory stay bounded; a normal client keeps being answered meanwhile.
// How fast the normal client is answered is a timing: the slow-clients bench section measures it.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, tinyRegistryFile, type ServeProcess } from '../serve-process.js';
import { figures, interactiveLoad, percentile, waitFor, UNLIMITED_RPM } from './helpers.js';

const KEY = 'fault-slow-key';
const N = Number(process.env.ASSAY_FAULT_SLOW_CONNECTIONS ?? 1000);
const TIMEOUTS = { headers: 3_000, keepAlive: 3_000, send: 3_000, request: 6_000 };
/** What the server may hold past its idle footprint while the clients run: 1,000s of sockets and one 6 MB response. Stated, not fitted. */
const MEMORY_ALLOWANCE = 256 * 2 ** 20;

/** A client that reads a byte a second: one request answered, then the big one, then recv(1) each second. */
const SLOW_READER = `
import re, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(('127.0.0.1', int(sys.argv[1])))
s.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')
buf = b''
while b'\\r\\n\\r\\n' not in buf:
    buf += s.recv(4096)
head, rest = buf.split(b'\\r\\n\\r\\n', 1)
n = int(re.search(rb'(?i)content-length: (\\d+)', head).group(1))
while len(rest) < n:
    rest += s.recv(4096)
s.sendall(open(sys.argv[2], 'rb').read())
print('sent', flush=True)
while s.recv(1):
    time.sleep(1)
`;

const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

interface Conn {
  socket: Socket;
  /** What the server sent. */
  received: string;
  /** When the server closed it (ms since the test's start); undefined while open. */
  closedAt?: number;
}

function open(s: ServeProcess, t0: number, first = ''): Promise<Conn> {
  const { port } = new URL(s.base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const c: Conn = { socket, received: '' };
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (c.received += d));
    socket.on('close', () => (c.closedAt ??= performance.now() - t0));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      if (first) socket.write(first);
      resolve(c);
    });
    socket.once('error', reject);
  });
}

/** Connections opened `n` at a time (a thousand at once would meet the listen backlog). */
async function openMany(s: ServeProcess, n: number, t0: number, first = ''): Promise<Conn[]> {
  const out: Conn[] = [];
  for (let i = 0; i < n; i += 100)
    out.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => open(s, t0, first)))));
  return out;
}

describe('fault: slow and hostile clients', () => {
  it('closes them by its timeouts with JSON errors, keeps fds and memory bounded, and answers a normal client', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-slow-'));
    const s = await startServe(
      tinyRegistryFile(dir, modelDir),
      [
        '--headers-timeout-ms',
        String(TIMEOUTS.headers),
        '--keep-alive-timeout-ms',
        String(TIMEOUTS.keepAlive),
        '--send-timeout-ms',
        String(TIMEOUTS.send),
        '--request-timeout-ms',
        String(TIMEOUTS.request),
        '--rpm',
        '1000000',
      ],
      { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: UNLIMITED_RPM },
    );
    const conns: Conn[] = [];
    const timers: NodeJS.Timeout[] = [];
    const children: ChildProcess[] = [];
    try {
      await interactiveLoad(s.base, KEY, 1).stop(); // warm-up
      const baseline = { fds: fds(s.pid), rss: rss(s.pid) };
      const t0 = performance.now();
      const normal = interactiveLoad(s.base, KEY, 1);
      let peak = { ...baseline };
      const sampler = setInterval(() => {
        peak = { fds: Math.max(peak.fds, fds(s.pid)), rss: Math.max(peak.rss, rss(s.pid)) };
      }, 100);
      timers.push(sampler);

      // 1. Headers at a byte a second.
      const headers = `POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\n`;
      const trickling = await openMany(s, N, t0, headers[0]);
      let at = 1;
      const trickle = setInterval(() => {
        for (const c of trickling) if (c.closedAt === undefined) c.socket.write(headers[at % headers.length]!);
        at++;
      }, 1000);
      timers.push(trickle);
      // 2. Idle keep-alive sockets, each after one answered request.
      const idle = await openMany(s, N, t0, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      // 3. A large response (a 422 that echoes a 6 MB body) read a byte a second, on a connection
      // kept alive from a request before it. The reader is Python: a Node socket reads what the
      // kernel holds in 64 KB pieces, whatever its caller consumes; this one asks for one byte at
      // a time, with a 4 KB receive buffer, as a slow client on a slow link does.
      const big = JSON.stringify({ document: 'x'.repeat(6 * 2 ** 20), model: 'svc-latest', questions: {} });
      const request = join(dir, 'big-request');
      writeFileSync(
        request,
        `POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`,
      );
      const reader = spawn('python3', ['-c', SLOW_READER, new URL(s.base).port, request], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(reader);
      await new Promise<void>((sent) => reader.stdout.on('data', (d: Buffer) => /sent/.test(String(d)) && sent()));
      // 4. A body towards the 8 MiB limit at 1 KB/s.
      const uploader = await open(
        s,
        t0,
        `POST /v1/systemone HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${8 * 2 ** 20}\r\n\r\n{"state": "`,
      );
      const upload = setInterval(() => uploader.socket.write('y'.repeat(1024)), 1000);
      timers.push(upload);
      conns.push(...trickling, ...idle, uploader);

      // Every one of them is closed by the server, none left open.
      await waitFor(
        () => [...trickling, ...idle, uploader].every((c) => c.closedAt !== undefined),
        'the server to close them',
        60_000,
      );
      // The slow reader's connection is the server's to close, by its send timeout once the response
      // stops making progress (the kernel may still deliver what it had queued); then its descriptor goes.
      await waitFor(() => /"reason":"send_timeout"/.test(s.out()), 'the send timeout to cut the slow reader', 60_000);
      await waitFor(() => fds(s.pid) <= baseline.fds + 5, 'the server’s descriptors back to its idle count', 60_000);
      for (const t of timers) clearInterval(t);
      const normalSamples = await normal.stop();

      // What they were told: JSON errors (408 for the request not sent in time), never a bare status line.
      for (const c of [...trickling, uploader]) {
        expect(c.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
        expect(JSON.parse(c.received.split('\r\n\r\n')[1]!)).toMatchObject({
          detail: expect.stringMatching(/timeout-ms/),
        });
      }
      for (const c of idle) expect(c.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      const metrics = await (await fetch(`${s.base}/metrics`)).text();
      expect(metrics).toMatch(/assay_http_connections_cut_total\{reason="send_timeout"\} 1/);
      expect(metrics).toMatch(new RegExp(`assay_http_connections_cut_total\\{reason="headers_timeout"\\} ${N}\n`));
      expect(metrics).toMatch(/assay_http_connections_cut_total\{reason="request_timeout"\} 1\n/);

      // A normal client was answered throughout; memory and descriptors stayed bounded.
      expect(normalSamples.filter((x) => x.status !== 200)).toEqual([]);
      expect(peak.rss - baseline.rss).toBeLessThan(MEMORY_ALLOWANCE);
      expect(s.exitCode()).toBeUndefined();
      const closed = (cs: Conn[]) => Math.max(...cs.map((c) => c.closedAt!));
      figures('slow-clients', {
        connections: N,
        timeouts_ms: TIMEOUTS,
        trickling_all_closed_ms: closed(trickling),
        idle_all_closed_ms: closed(idle),
        upload_closed_ms: uploader.closedAt,
        fds_baseline: baseline.fds,
        fds_peak: peak.fds,
        rss_baseline_mib: baseline.rss / 2 ** 20,
        rss_peak_mib: peak.rss / 2 ** 20,
        normal_requests: normalSamples.length,
        normal_p50_ms: percentile(normalSamples, 50),
        normal_p99_ms: percentile(normalSamples, 99),
      });
    } finally {
      for (const t of timers) clearInterval(t);
      for (const c of conns) c.socket.destroy();
      for (const c of children) c.kill();
      await s.stop();
    }
  }, 180_000);
});

// Slow and hostile clients against the real server (`assay serve`, tiny model, loopback), with the
// server's default timeouts: a normal client's latency idle, then while 1,000 connections trickle
// their headers a byte a second (each reopened when the server closes it, so the 1,000 stay),
// 1,000 idle keep-alive sockets sit open, one client reads a 6 MB response a byte a second and one
// uploads a body at 1 KB/s. The normal client sends one-question requests back to back from a
// thread of its own, the attackers from a child process at nice 19. Reported: its
// p50 / p99 idle and under the attack (goal: p99 ≤ 1.5× idle), the server's descriptors and RSS at
// the peak, and the connections the server cut by reason (its /metrics).
//   npx tsx bench/slow-clients.ts [--quick]   or   npm run bench -- --only slow-clients
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchServer } from './lib/server.js';
import { createContext, table, type BenchContext, type SectionResult } from './lib/context.js';
import { quantile, round } from './lib/stats.js';

const KEY = 'bench-slow-clients-key';
const MODEL = 'slow-1.0.0';
const N = 1000;

/** The normal client's loop in a worker thread: one-question requests back to back until stopped; their latencies, ms. */
function normalClient(url: string): { stop(): Promise<{ ms: number[]; failed: number }> } {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    let running = true;
    const ms = [];
    let failed = 0;
    parentPort.on('message', () => (running = false));
    (async () => {
      for (let i = 0; running; i++) {
        const body = JSON.stringify({ model: workerData.model, state: 'Invoice ' + (i % 50) + ' was paid on time by the customer.',
          questions: { paid: { type: 'noul', instructions: 'Was the invoice paid?' } } });
        const t0 = performance.now();
        try {
          const res = await fetch(workerData.url + '/v1/systemone', { method: 'POST', body,
            headers: { authorization: 'Bearer ' + workerData.key, 'content-type': 'application/json' } });
          await res.text();
          if (res.status === 200) ms.push(performance.now() - t0); else failed++;
        } catch { failed++; }
      }
      parentPort.postMessage({ ms, failed });
    })();`;
  const worker = new Worker(source, { eval: true, workerData: { url, key: KEY, model: MODEL } });
  const done = new Promise<{ ms: number[]; failed: number }>((ok, fail) => {
    worker.once('message', ok);
    worker.once('error', fail);
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      const r = await done;
      await worker.terminate();
      return r;
    },
  };
}

/**
 * The four kinds of hostile clients, kept up until stopped, in a child process at the lowest
 * priority: an attacker runs on machines of its own, and here it would otherwise take the cores the
 * server and the normal client share (2,000 sockets written every second).
 */
function attack(port: number): { stop(): Promise<void> } {
  const source = `
    const { connect } = require('node:net');
    const port = ${port}, N = ${N}, KEY = ${JSON.stringify(KEY)}, MODEL = ${JSON.stringify(MODEL)};
    // A connection whose first bytes are 'first' (written now: sent once it connects, before any later write).
    const open = (first) => { const s = connect(port, '127.0.0.1'); s.on('error', () => {}); s.write(first); return s; };
    const head = 'POST /v1/systemone HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer ' + KEY + '\\r\\n';
    let running = true;
    const trickling = [];
    const keep = (i) => {
      const s = open(head[0]);
      trickling[i] = { s, at: 1 };
      s.once('close', () => running && keep(i)); // the attacker comes back
    };
    for (let i = 0; i < N; i++) keep(i);
    const trickle = setInterval(() => {
      for (const t of trickling) if (!t.s.destroyed) t.s.write(head[t.at++ % head.length]);
    }, 1000);
    const idle = Array.from({ length: N }, () => open('GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n'));
    const big = JSON.stringify({ document: 'x'.repeat(6 * 2 ** 20), model: MODEL, questions: {} });
    const reader = open('POST /v1/systemone HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nAuthorization: Bearer ' + KEY +
      '\\r\\nContent-Type: application/json\\r\\nContent-Length: ' + big.length + '\\r\\n\\r\\n' + big);
    reader.pause();
    const uploader = open(head + 'Content-Type: application/json\\r\\nContent-Length: ' + 8 * 2 ** 20 + '\\r\\n\\r\\n{"state": "');
    const slow = setInterval(() => { reader.read(1); uploader.write('y'.repeat(1024)); }, 1000);
    process.stdin.resume();
    process.stdin.on('end', () => {
      running = false;
      clearInterval(trickle);
      clearInterval(slow);
      for (const s of [...trickling.map((t) => t.s), ...idle, reader, uploader]) s.destroy();
      process.exit(0);
    });`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'ignore', 'inherit'] });
  setPriority(child.pid!, 19);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    async stop() {
      child.stdin!.end();
      await exited;
    },
  };
}

/** The server's CPU time so far (user + system, all its threads), ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

function serverFacts(pid: number): { fds: number; rssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { fds: readdirSync(`/proc/${pid}/fd`).length, rssMiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024 };
}

interface Phase {
  n: number;
  failed: number;
  p50: number;
  p99: number;
  /** The server's CPU time per second of the phase, ms, and per answered request. */
  cpuMsPerSecond: number;
  cpuMsPerRequest: number;
}

async function phase(url: string, pid: number, ms: number): Promise<Phase> {
  const cpu0 = cpuMs(pid);
  const client = normalClient(url);
  await new Promise((r) => setTimeout(r, ms));
  const r = await client.stop();
  const cpu = cpuMs(pid) - cpu0;
  const sorted = r.ms.sort((a, b) => a - b);
  return {
    n: sorted.length,
    failed: r.failed,
    p50: round(quantile(sorted, 0.5), 1),
    p99: round(quantile(sorted, 0.99), 1),
    cpuMsPerSecond: round(cpu / (ms / 1000), 0),
    cpuMsPerRequest: round(cpu / Math.max(1, sorted.length), 2),
  };
}

export async function slowClientsSection(ctx: BenchContext): Promise<SectionResult> {
  const t0 = performance.now();
  const seconds = ctx.quick ? 15 : 40;
  const server = await startBenchServer({
    modelDir: await ctx.model('tiny', 'fp32'),
    threads: ctx.threads,
    key: KEY,
    model: MODEL,
    args: ['--rpm', '1000000', '--tps', '1000000000'],
  });
  try {
    const pid = server.proc.pid!;
    const port = Number(new URL(server.url).port);
    await phase(server.url, pid, 3_000); // warm-up
    ctx.log(`  idle, ${seconds} s`);
    const idle = await phase(server.url, pid, seconds * 1000);
    const before = serverFacts(pid);
    ctx.log(`  under attack, ${seconds} s`);
    const hostile = attack(port);
    let peak = { ...before };
    const sampler = setInterval(() => {
      const f = serverFacts(pid);
      peak = { fds: Math.max(peak.fds, f.fds), rssMiB: Math.max(peak.rssMiB, f.rssMiB) };
    }, 200);
    const attacked = await phase(server.url, pid, seconds * 1000);
    clearInterval(sampler);
    await hostile.stop();
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const cut = Object.fromEntries(
      [...metrics.matchAll(/assay_http_connections_cut_total\{reason="(\w+)"\} (\d+)/g)].map((m) => [
        m[1],
        Number(m[2]),
      ]),
    );
    const ratio = round(attacked.p99 / idle.p99, 2);
    ctx.log(
      `    p99 ${idle.p99} → ${attacked.p99} ms (${ratio}×); fds ${before.fds} → ${peak.fds}; RSS peak ${round(peak.rssMiB, 0)} MiB; cut ${JSON.stringify(cut)}`,
    );
    const markdown = table(
      ['normal client', 'requests', 'failed', 'p50 ms', 'p99 ms', 'server CPU ms/s', 'server CPU ms/request'],
      [
        ['idle', idle.n, idle.failed, idle.p50, idle.p99, idle.cpuMsPerSecond, idle.cpuMsPerRequest],
        [
          'under the attack',
          attacked.n,
          attacked.failed,
          attacked.p50,
          attacked.p99,
          attacked.cpuMsPerSecond,
          attacked.cpuMsPerRequest,
        ],
      ],
    );
    return {
      id: 'slow-clients',
      title: 'Slow and hostile clients (tiny model, `assay serve` on loopback, default timeouts)',
      config: { threads: ctx.threads, seconds, connections: N },
      results: { idle, attacked, server: { before, peak }, cut },
      targets: [
        {
          name: 'normal client p99 under slow clients',
          goal: '≤ 1.5× idle',
          value: ratio,
          unit: '×',
          met: ratio <= 1.5 && attacked.failed === 0,
        },
      ],
      notes: [
        `${N} connections trickle headers a byte a second (reopened when closed), ${N} idle keep-alive sockets, one 6 MB response read a byte a second, one body at 1 KB/s; the server's descriptors ${before.fds} → ${peak.fds} at the peak, RSS ${round(before.rssMiB, 0)} → ${round(peak.rssMiB, 0)} MiB; connections cut: ${JSON.stringify(cut)}. The normal client runs in a thread of its own, the attackers in a process at nice 19 (their machines are their own); all of it shares the machine's cores with the server.`,
      ],
      markdown,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    await server.stop();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ctx = createContext({ quick: process.argv.includes('--quick'), threads: 2 });
  const r = await slowClientsSection(ctx);
  process.stdout.write(`${r.markdown}\n\n${r.notes.join('\n')}\n`);
}

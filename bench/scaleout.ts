// 8. Scale-out: three replicas (tiny model, one thread each) behind nginx (deploy/local/cluster.ts),
// routed as the ingress routes them (consistent hashing on x-assay-state-hash) against round robin.
// The workload: 200 states of ~600 tokens drawn from a Zipf distribution (s = 1.1: a few hot
// states, a long tail), 4 questions each, 6 clients at once, the same seeded sequence for both
// policies; each replica's prefix cache holds 17 states (the 0.5B model's proportion, below). Halfway through, one replica is killed (SIGKILL): its health check fails, nginx stops
// sending to it, and with hashing its states move to the others. Measured: prefix-cache hit rate
// (the replicas' own /metrics), throughput, latency p50/p99, and each replica's share of requests
// (what a hot state costs the replica it lands on).
import { startCluster, type Cluster } from '../deploy/local/cluster.js';
import { stateHash, TextCodec } from '../src/internal.js';
import { table, type BenchContext, type SectionResult } from './lib/context.js';
import { quantile } from './lib/stats.js';
import { mixedQuestions, rng, textOfTokens } from './lib/text.js';

const KEY = 'bench-scaleout-key';
const STATES = 200;
const ZIPF_S = 1.1;
const CONCURRENCY = 6;
/**
 * Each replica's prefix cache holds 17 states, as `assay serve`'s default 256 MiB does for the real
 * qwen2.5-0.5b shape: 24 layers × K,V × 2 KV heads × 64 × 4 B = 24 KiB a token, 14.7 MB a
 * 600-token state. The tiny model's prefix of such a state measures 324,608 B, so 17 of them are
 * 5.5 MB. With the default 256 MiB the tiny model would cache all 200 states on every replica and
 * the routing would not matter (measured: 80% vs 70% hits, the same throughput).
 */
const CACHE_BYTES = 17 * 324_608;

/** Indices of states, Zipf(s)-distributed over 0..n-1, from a seeded generator. */
function zipfSequence(n: number, s: number, count: number, seed: number): number[] {
  const weights = Array.from({ length: n }, (_, k) => 1 / (k + 1) ** s);
  const total = weights.reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  let acc = 0;
  for (const w of weights) cumulative.push((acc += w / total));
  const rand = rng(seed);
  return Array.from({ length: count }, () => {
    const u = rand();
    const i = cumulative.findIndex((c) => c >= u);
    return i < 0 ? n - 1 : i;
  });
}

async function cacheCounts(url: string): Promise<{ hits: number; misses: number }> {
  const text = await fetch(`${url}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
  const sum = (name: string) =>
    [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
  return { hits: sum('assay_prefix_cache_hits_total'), misses: sum('assay_prefix_cache_misses_total') };
}

interface PolicyResult {
  balance: 'hash' | 'round-robin';
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  hitRate: number;
  hitRateBeforeKill: number;
  hitRateAfterKill: number;
  statuses: Record<string, number>;
  /** Requests each replica answered, before and after the kill. */
  share: Record<string, { before: number; after: number }>;
  /** Share of the hottest state's replica among all requests before the kill (hashing only). */
  hottest: { replica: string; share: number; stateShare: number };
}

async function runPolicy(
  ctx: BenchContext,
  balance: 'hash' | 'round-robin',
  bodies: string[],
  hashes: string[],
  sequence: number[],
): Promise<PolicyResult> {
  const cluster: Cluster = await startCluster({
    modelDir: await ctx.model('tiny', 'fp32'),
    replicas: 3,
    balance,
    key: KEY,
    threadsPerReplica: 1,
    serveArgs: ['--prefix-cache-bytes', String(CACHE_BYTES)],
  });
  try {
    const replicaUrl = (id: string) => `http://127.0.0.1:${cluster.replicas.find((r) => r.id === id)!.port}`;
    const counts = async () =>
      Object.fromEntries(
        await Promise.all(cluster.replicas.map(async (r) => [r.id, await cacheCounts(replicaUrl(r.id))] as const)),
      );
    const start = await counts();
    const latencies: number[] = [];
    const statuses: Record<string, number> = {};
    const share: Record<string, { before: number; after: number }> = {};
    const byState: Array<Record<string, number>> = [];
    const half = Math.floor(sequence.length / 2);
    let next = 0;
    let killed = false;
    let atKill: Record<string, { hits: number; misses: number }> = {};
    const t0 = performance.now();
    const client = async () => {
      while (next < sequence.length) {
        const n = next++;
        if (n === half && !killed) {
          killed = true;
          atKill = await counts();
          cluster.replicas.find((r) => r.id === 'r2')!.process.kill('SIGKILL');
        }
        const s = sequence[n]!;
        const t = performance.now();
        const res = await fetch(`${cluster.url}/v1/systemone`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${KEY}`,
            'content-type': 'application/json',
            'x-assay-state-hash': hashes[s]!,
          },
          body: bodies[s]!,
        }).catch(() => undefined);
        if (res) await res.arrayBuffer();
        latencies.push(performance.now() - t);
        const status = String(res?.status ?? 'error');
        statuses[status] = (statuses[status] ?? 0) + 1;
        const replica = res?.headers.get('x-assay-replica') ?? 'none';
        share[replica] ??= { before: 0, after: 0 };
        share[replica][n < half ? 'before' : 'after']++;
        if (n < half) (byState[s] ??= {})[replica] = (byState[s]![replica] ?? 0) + 1;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, client));
    const seconds = (performance.now() - t0) / 1000;
    const end = await counts();
    // The killed replica's counters as they were at the kill; the others' at the end.
    const rate = (from: typeof start, to: typeof start, ids: string[]) => {
      let hits = 0;
      let total = 0;
      for (const id of ids) {
        const h = (to[id]?.hits ?? 0) - (from[id]?.hits ?? 0);
        hits += h;
        total += h + (to[id]?.misses ?? 0) - (from[id]?.misses ?? 0);
      }
      return total ? hits / total : 0;
    };
    const survivors = ['r1', 'r3'];
    const allIds = ['r1', 'r2', 'r3'];
    const finalCounts = { ...end, r2: atKill.r2 ?? { hits: 0, misses: 0 } };
    const sorted = [...latencies].sort((a, b) => a - b);
    const hottestState = byState[0] ?? {};
    const [hotReplica] = Object.entries(hottestState).sort((a, b) => b[1] - a[1])[0] ?? ['none'];
    const beforeTotal = Object.values(share).reduce((a, v) => a + v.before, 0);
    return {
      balance,
      requests: sequence.length,
      seconds,
      requestsPerSecond: sequence.length / seconds,
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      hitRate: rate(start, finalCounts, allIds),
      hitRateBeforeKill: rate(start, atKill, allIds),
      hitRateAfterKill: rate(atKill, end, survivors),
      statuses,
      share,
      hottest: {
        replica: hotReplica,
        share: (share[hotReplica]?.before ?? 0) / beforeTotal,
        stateShare: Object.values(hottestState).reduce((a, b) => a + b, 0) / half,
      },
    };
  } finally {
    await cluster.stop();
  }
}

export async function scaleoutSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const count = ctx.quick ? 240 : 720;
  const tokens = ctx.quick ? 300 : 600;
  const codec = await TextCodec.load(await ctx.model('tiny', 'fp32'));
  const questions = mixedQuestions(4);
  const states = Array.from({ length: STATES }, (_, i) => textOfTokens(codec, tokens, 1_000 + i));
  const bodies = states.map((state) => JSON.stringify({ state, model: 'svc-latest', questions }));
  // What the client SDK sends.
  const hashes = states.map((state) => stateHash(state));
  const sequence = zipfSequence(STATES, ZIPF_S, count, 42);
  ctx.log(
    `  ${count} requests, ${STATES} states of ${tokens} tokens (Zipf s=${ZIPF_S}; the hottest is ${((sequence.filter((s) => s === 0).length / count) * 100).toFixed(1)}% of requests), 4 questions, ${CONCURRENCY} clients, r2 killed halfway`,
  );
  const results: PolicyResult[] = [];
  for (const balance of ['hash', 'round-robin'] as const) {
    const r = await runPolicy(ctx, balance, bodies, hashes, sequence);
    ctx.log(
      `  ${balance}: hit rate ${(r.hitRate * 100).toFixed(1)}%, ${r.requestsPerSecond.toFixed(2)} req/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, ${JSON.stringify(r.statuses)}`,
    );
    results.push(r);
  }
  const [hash, rr] = results as [PolicyResult, PolicyResult];
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const shares = (r: PolicyResult) =>
    Object.entries(r.share)
      .sort()
      .map(([id, v]) => `${id} ${v.before}/${v.after}`)
      .join(', ');
  return {
    id: 'scaleout',
    title: '8. Scale-out: three replicas behind nginx, state-hash routing vs round robin (tiny model)',
    config: {
      replicas: 3,
      threadsPerReplica: 1,
      prefixCacheBytesPerReplica: CACHE_BYTES,
      states: STATES,
      zipf: ZIPF_S,
      requests: count,
      stateTokens: tokens,
      questions: 4,
      concurrency: CONCURRENCY,
      killed: 'r2 at half',
    },
    results: { hash, roundRobin: rr },
    targets: [
      {
        name: 'prefix-cache hit rate, hashed vs round robin',
        goal: 'higher',
        value: hash.hitRate,
        unit: 'ratio',
        met: hash.hitRate > rr.hitRate,
        detail: `${pct(hash.hitRate)} vs ${pct(rr.hitRate)}`,
      },
      {
        name: 'throughput, hashed vs round robin',
        goal: '≥ 1×',
        value: hash.requestsPerSecond / rr.requestsPerSecond,
        unit: '×',
        met: hash.requestsPerSecond >= rr.requestsPerSecond,
        detail: `${hash.requestsPerSecond.toFixed(2)} vs ${rr.requestsPerSecond.toFixed(2)} req/s`,
      },
      {
        name: 'requests lost to the kill (non-200)',
        goal: '0',
        value: [hash, rr].reduce((a, r) => a + r.requests - (r.statuses['200'] ?? 0), 0),
        unit: 'requests',
        met: [hash, rr].every((r) => r.statuses['200'] === r.requests),
      },
    ],
    notes: [
      "Both policies see the same seeded request sequence. The hit rate sums the replicas' own prefix-cache counters (the killed replica's as of the kill).",
      `Hashing: the hottest state (${pct(hash.hottest.stateShare)} of requests) lives on ${hash.hottest.replica}, which answered ${pct(hash.hottest.share)} of requests before the kill (a fair share is 33.3%).`,
      'After the kill, nginx retries a request whose replica is gone on the next one (an evaluation changes nothing), and the harness takes the replica out of the upstream once its /healthz fails.',
    ],
    markdown: table(
      [
        'routing',
        'requests/s',
        'p50 ms',
        'p99 ms',
        'hit rate',
        'before kill',
        'after kill (r1, r3)',
        'answered by (before/after kill)',
        'statuses',
      ],
      results.map((r) => [
        r.balance,
        r.requestsPerSecond.toFixed(2),
        r.p50.toFixed(0),
        r.p99.toFixed(0),
        pct(r.hitRate),
        pct(r.hitRateBeforeKill),
        pct(r.hitRateAfterKill),
        shares(r),
        JSON.stringify(r.statuses),
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}

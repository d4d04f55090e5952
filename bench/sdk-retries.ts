// Many callers at once against a full queue, as the official TypeScript SDK meets it: N concurrent
// calls (default 12), each with the SDK's default retries (2 retries, waiting what `retry-after-ms`
// says, 10 s per attempt), against `assay serve --max-queue 1` on the tiny synthetic model. Prints
// how many calls were answered per round, and for each call what every attempt got (status and the
// wait it was told). A measurement to run by hand, not a test: how many succeed depends on the
// machine's speed and load.
//   npx tsx bench/sdk-retries.ts [--calls 12] [--rounds 3] [--words 1800] [--fresh] [--repo DIR]
// --fresh starts a new server for every round (its first burst, before it has timed any request);
// otherwise one server answers a warm-up round first, then the measured rounds.
// --repo DIR runs another checkout's server (its bin/ and dist/), for a before/after comparison.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { APIError, TypeSafeClient, choice, noul, score } from '@typesafe-ai/sdk';
import { createContext } from './lib/context.js';
import { startBenchServer, type BenchServer } from './lib/server.js';

const KEY = 'bench-sdk-retries-key';

const { values: flags } = parseArgs({
  options: {
    calls: { type: 'string', default: '12' },
    rounds: { type: 'string', default: '3' },
    words: { type: 'string', default: '1800' },
    fresh: { type: 'boolean', default: false },
    repo: { type: 'string' },
  },
});
const calls = Number(flags.calls);
const rounds = Number(flags.rounds);
const words = Number(flags.words);

const prose = Array.from({ length: words }, (_, i) => ['invoice', 'paid', 'late', 'card', 'cash'][i % 5]).join(' ');
/** Each call's state is its own from the first token, so no call is answered from another's cached prefix. */
let made = 0;
const state = () => `Ticket ${++made}: ${prose}`;
const questions = {
  paid: noul('Was the invoice paid?'),
  channel: choice('How was it paid?', { card: null, transfer: null, cash: null }),
  punctuality: score('How punctual?', ['late', 'on the day', 'early']),
};

interface Attempt {
  status: number;
  /** What the refusal said to wait (retry-after-ms), when it said. */
  told?: number;
  /** ms since the round began. */
  at: number;
}

interface Call {
  attempts: Attempt[];
  outcome: string;
}

async function round(server: BenchServer): Promise<Call[]> {
  const t0 = performance.now();
  return Promise.all(
    Array.from({ length: calls }, async (): Promise<Call> => {
      const attempts: Attempt[] = [];
      const fetch = async (input: string, init?: RequestInit) => {
        const res = await globalThis.fetch(input, init);
        const told = res.headers.get('retry-after-ms');
        attempts.push({
          status: res.status,
          at: Math.round(performance.now() - t0),
          ...(told === null ? {} : { told: Number(told) }),
        });
        return res;
      };
      // As a user configures it: base URL, key, model; every other setting the SDK's default.
      const client = new TypeSafeClient({
        apiKey: KEY,
        baseURL: server.url,
        defaultModel: 'svc-latest',
        logLevel: 'off',
        fetch,
      });
      try {
        await client.systemOne({ state: state(), questions });
        return { attempts, outcome: 'answered' };
      } catch (e) {
        return { attempts, outcome: e instanceof APIError ? `${e.constructor.name} ${e.status}` : String(e) };
      }
    }),
  );
}

function report(label: string, result: Call[]): number {
  const answered = result.filter((c) => c.outcome === 'answered').length;
  console.log(`${label}: ${answered} of ${result.length} answered`);
  for (const c of result) {
    const trail = c.attempts.map((a) => `${a.status}@${a.at}${a.told === undefined ? '' : `(told ${a.told})`}`);
    console.log(`  ${c.outcome.padEnd(24)} ${trail.join(' → ')}`);
  }
  return answered;
}

const ctx = createContext({ quick: false });
const modelDir = await ctx.model('tiny', 'fp32');
const start = () =>
  startBenchServer({
    repo: flags.repo ? resolve(flags.repo) : undefined,
    modelDir,
    threads: ctx.threads,
    key: KEY,
    model: 'svc-1.13.0',
    aliases: { 'svc-latest': 'svc-1.13.0' },
    args: ['--max-queue', '1', '--rpm', '1000000', '--tps', '100000000'],
  });

const totals: number[] = [];
if (flags.fresh) {
  for (let r = 1; r <= rounds; r++) {
    const server = await start();
    try {
      totals.push(report(`fresh server, round ${r}`, await round(server)));
    } finally {
      await server.stop();
    }
  }
} else {
  const server = await start();
  try {
    report('warm-up round (not counted)', await round(server));
    for (let r = 1; r <= rounds; r++) totals.push(report(`round ${r}`, await round(server)));
  } finally {
    await server.stop();
  }
}
console.log(
  `answered: ${totals.join(', ')} of ${calls} (${totals.reduce((a, b) => a + b, 0)} of ${calls * totals.length})`,
);

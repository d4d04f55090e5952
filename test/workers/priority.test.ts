// Background threads (src/workers/priority.ts): a batch-only thread lowers its own priority, and only
// its own. Read back from the kernel (/proc/self/task/<tid>/stat, field 19 is the nice value), on
// Linux, where the server runs in production; elsewhere runInBackground is a no-op.
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { BACKGROUND_NICE } from '../../src/workers/index.js';
import { workerPlanner } from '../../src/engine/prompting/planner/index.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { request, manyQuestions, tinyFp32 } from '../engine/fixtures.js';

/** The nice value of each of this process's threads, by thread id. */
function niceByThread(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces) in parentheses: state is field 3.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), Number(fields[19 - 3]));
    } catch {
      // the thread ended while listed
    }
  }
  return out;
}

const background = () => [...niceByThread().values()].filter((n) => n === BACKGROUND_NICE).length;

describe.runIf(process.platform === 'linux')('background threads', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("the batch lane's planner threads run at the lowest priority; the interactive lane's and this thread stay as they were", async () => {
    const dir = await tinyFp32();
    const codec = await TextCodec.load(dir);
    const budgets = { request: 64_000, question: 32_000, context: 32_768 };
    const before = niceByThread();
    const planner = workerPlanner({ modelDir: dir, endToken: codec.eosTokenId!, budgets, threads: 2, maxQueue: 8 });
    closers.push(() => planner.close());
    const r = request(manyQuestions(3), 'A ticket about a parcel that arrived late.');
    // The interactive lane's threads start eagerly: planning there lowers nothing.
    await planner.plan(r);
    expect(background()).toBe(0);
    // The batch lane's threads start on first use, and each lowers its own priority.
    await Promise.all([planner.plan(r, undefined, 'batch'), planner.plan(r, undefined, 'batch')]);
    expect(background()).toBeGreaterThanOrEqual(1);
    // Every thread that was there before keeps its priority (the main thread among them).
    const after = niceByThread();
    for (const [tid, nice] of before) if (after.has(tid)) expect(after.get(tid)).toBe(nice);
    expect(after.get(process.pid)).toBe(before.get(process.pid));
  });
});

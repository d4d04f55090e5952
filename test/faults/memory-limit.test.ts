// Fault: a memory limit below the machine's, as a container has. `assay serve` runs in a memory
// cgroup (test/helpers/cgroup.ts: cgroup v2 memory.max, or v1 memory.limit_in_bytes) with no
// --memory-budget: the default budget is half the cgroup's limit, not half the machine's. Residency
// churn (four models, room for about three) and a batch run under it without the kernel's OOM
// killer ending the process; a model whose files alone pass the budget gets 503 model_too_large.
import { closeSync, mkdirSync, mkdtempSync, openSync, ftruncateSync, writeFileSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mixedRequest } from '../api/helpers.js';
import { memoryCgroup, memoryCgroupMissing } from '../helpers/cgroup.js';
import { startServe, type ServeProcess } from '../serve-process.js';
import { completedOnce, jsonl, submit } from '../batches/helpers.js';
import { batchLines, figures } from './helpers.js';

const KEY = 'fault-mem-key';
/** The container's limit: 1.75 GiB, far below the machine's; the default budget is then 896 MiB. */
const LIMIT = 1.75 * 2 ** 30;
const MODELS = ['svc-1.13.0', 'm-b', 'm-c', 'm-d'];
/** Rounds of the four models each client asks in turn. */
const ROUNDS = Number(process.env.ASSAY_FAULT_MEM_ROUNDS ?? 3);
const missing = memoryCgroupMissing();
if (missing) console.log(`memory-limit fault skipped: ${missing}`);

interface Asked {
  status: number;
  detail?: string;
  retryAfterMs?: number;
}

async function ask(s: ServeProcess, model: string): Promise<Asked> {
  const res = await fetch(`${s.base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...mixedRequest(), model }),
  });
  const ms = res.headers.get('retry-after-ms');
  return {
    status: res.status,
    detail: ((await res.json()) as { detail?: string }).detail,
    ...(ms ? { retryAfterMs: Number(ms) } : {}),
  };
}

describe.skipIf(missing)('fault: a memory limit below the machine’s', () => {
  it('sizes the default budget to the cgroup, churns models and runs a batch without an OOM kill, refuses what cannot fit', async () => {
    expect(LIMIT).toBeLessThan(totalmem());
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-mem-'));
    // A model whose files alone (a 4 GiB sparse weight file: no disk, no memory) pass the budget.
    const huge = join(dir, 'huge');
    mkdirSync(join(huge, 'onnx'), { recursive: true });
    const fd = openSync(join(huge, 'onnx', 'model.onnx_data'), 'w');
    ftruncateSync(fd, 4 * 2 ** 30);
    closeSync(fd);
    const registry = join(dir, 'registry.json');
    const entry = (path: string) => ({ path, description: 'tiny', release_date: '2026-11-22' });
    writeFileSync(
      registry,
      JSON.stringify({
        default: 'svc-1.13.0',
        models: { ...Object.fromEntries(MODELS.map((id) => [id, entry(modelDir)])), 'm-huge': entry(huge) },
        aliases: { 'svc-latest': 'svc-1.13.0' },
      }),
    );
    const cg = memoryCgroup(LIMIT);
    let s: ServeProcess | undefined;
    try {
      s = await startServe(
        registry,
        ['--max-loaded-models', '4', '--prefix-cache-bytes', String(16 * 2 ** 20), '--keep-alive=-1'],
        { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: '100000000' },
        (argv) => cg.via(argv),
      );
      // The default budget follows the cgroup's limit (process.constrainedMemory), not the machine.
      const view = (await (
        await fetch(`${s.base}/admin/models`, { headers: { authorization: `Bearer ${KEY}` } })
      ).json()) as {
        memory_budget_bytes: number;
      };
      expect(view.memory_budget_bytes).toBe(Math.floor(LIMIT * 0.5));

      // Too large for the budget: refused before it loads, 503 without retry-after.
      const tooLarge = await ask(s, 'm-huge');
      expect(tooLarge.status).toBe(503);
      expect(tooLarge.detail).toMatch(/more than the whole memory budget/);
      expect(tooLarge.retryAfterMs).toBeUndefined();

      // A batch on the default model, and three clients asking the four models in turn.
      const lines = batchLines(300, 10, 'mem');
      const res = await submit(s.base, jsonl(lines), {}, KEY);
      expect(res.status).toBe(200);
      const batchId = ((await res.json()) as { id: string }).id;
      const seen: Asked[] = [];
      const client = async (offset: number): Promise<void> => {
        for (let i = 0; i < ROUNDS * MODELS.length; i++) {
          const model = MODELS[(i + offset) % MODELS.length]!;
          for (;;) {
            const r = await ask(s!, model);
            seen.push(r);
            if (r.status !== 503 || r.retryAfterMs === undefined) break;
            // Every place busy: come back when told (as the SDKs do).
            await new Promise((ok) => setTimeout(ok, r.retryAfterMs));
          }
        }
      };
      await Promise.all([0, 1, 2].map(client));
      const results = await completedOnce(s.base, batchId, lines.length, KEY);

      // Every request answered, or told to come back for room; nothing else; the process alive.
      const other = seen.filter(
        (r) => r.status !== 200 && !(r.status === 503 && /cannot be loaded now/.test(r.detail ?? '')),
      );
      expect(other).toEqual([]);
      expect(s.exitCode()).toBeUndefined();
      expect(cg.oomKills()).toBe(0);
      const metrics = await (await fetch(`${s.base}/metrics`)).text();
      const evicted = [...metrics.matchAll(/assay_model_unloads_total\{model="[^"]+",cause="evicted"\} (\d+)/g)].reduce(
        (t, m) => t + Number(m[1]),
        0,
      );
      expect(evicted).toBeGreaterThan(0);
      figures('memory-limit', {
        cgroup: `v${cg.version}`,
        limit_bytes: LIMIT,
        budget_bytes: view.memory_budget_bytes,
        peak_bytes: cg.peak(),
        oom_kills: cg.oomKills(),
        requests: seen.length,
        answered: seen.filter((r) => r.status === 200).length,
        busy_503: seen.filter((r) => r.status === 503).length,
        evictions: evicted,
        lines: lines.length,
        lines_lost: lines.length - results.length,
        lines_repeated: results.length - new Set(results.map((r) => r.custom_id)).size,
      });
    } finally {
      await s?.stop();
      cg.remove();
    }
  }, 600_000);
});

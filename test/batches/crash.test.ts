// Durability: `assay serve` killed with SIGKILL in the middle of a batch, then started again on the
// same data directory, finishes the batch with every custom_id in the results exactly once, and a
// line answered again after the restart gives the answer the same request gets sent alone (the
// answers are deterministic for a model and a request).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mixedRequest } from '../api/helpers.js';
import { startServe, tinyRegistryFile } from '../serve-process.js';
import { completedOnce, getBatch, jsonl, submit } from './helpers.js';

const KEY = 'crash-key';

describe('a batch across kill -9', () => {
  it('resumes after a restart: no line lost, none twice, answers as sent alone', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-batch-crash-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const dataDir = join(dir, 'data');
    const env = { ASSAY_API_KEYS: KEY };
    const flags = ['--data-dir', dataDir];
    // 200 states × 10 one-question lines each.
    const ids = ['paid', 'channel', 'punctuality'] as const;
    const lines = Array.from({ length: 2000 }, (_, i) => {
      const req = mixedRequest(`Ticket ${Math.floor(i / 10)}: the parcel was late and the customer paid by card.`);
      const id = ids[i % 3]!;
      return { custom_id: `line-${i}`, body: { ...req, questions: { [id]: req.questions[id] } } };
    });

    const first = await startServe(registry, flags, env);
    let batchId: string;
    try {
      const res = await submit(first.base, jsonl(lines), {}, KEY);
      expect(res.status).toBe(200);
      batchId = ((await res.json()) as { id: string }).id;
      // Killed once some lines are answered and most are not.
      for (let i = 0; ; i++) {
        const b = await getBatch(first.base, batchId, KEY);
        if (b.request_counts.completed >= 100) {
          expect(b.status).toBe('in_progress');
          break;
        }
        expect(i).toBeLessThan(3000);
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      process.kill(first.pid, 'SIGKILL');
      await first.stop();
    }

    const second = await startServe(registry, flags, env);
    try {
      const before = await getBatch(second.base, batchId, KEY);
      expect(before.request_counts.completed).toBeLessThan(lines.length);
      const results = await completedOnce(second.base, batchId, lines.length, KEY);

      // Lines answered after the restart (the last written) equal the request sent alone.
      const byId = new Map(results.map((r) => [r.custom_id, r]));
      for (const l of lines.slice(-5)) {
        const alone = await fetch(`${second.base}/v1/systemone`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify(l.body),
        });
        const expected = (await alone.json()) as {
          answers: Record<string, { probabilities?: unknown; score?: number }>;
        };
        const got = byId.get(l.custom_id)!.response!.body as typeof expected;
        for (const [q, a] of Object.entries(expected.answers))
          for (const [k, v] of Object.entries(a))
            if (typeof v === 'number')
              expect(Math.abs(v - (got.answers[q] as Record<string, number>)[k]!)).toBeLessThan(1e-6);
      }
    } finally {
      await second.stop();
    }
  }, 240_000);
});

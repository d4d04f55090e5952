// `assay eval --dataset FILE --url URL --batch`: the dataset's lines sent to the server as one batch
// (POST /v1/batches) instead of a request each. prepare() writes the lines as a JSONL batch input
// (each body as the client would send it alone, its questions and options in the line's order),
// waits for the batch with a progress bar and reads every result; evaluate() then answers a line
// from them, so the reports are computed from the same answers as request by request.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AssayBatches, AssayError, BATCH_ENDED, DEFAULT_MODEL } from '../../client/index.js';
import { SystemOneResponseSchema, writeRequest, type SystemOneResponse } from '../../protocol/index.js';
import { progressBar } from '../progress.js';
import type { DatasetLine } from './read.js';
import type { Target, TargetContext } from './target.js';

export function batchTarget(label: string, model: string | undefined, ctx: TargetContext): Target {
  const api = new AssayBatches({ baseUrl: ctx.url, env: ctx.io.env, timeoutMs: ctx.timeoutMs, maxRetries: 5 });
  const answers = new Map<DatasetLine, SystemOneResponse | string>();
  const target: Target = {
    label,
    model: model ?? DEFAULT_MODEL,
    synthetic: false,
    async prepare(lines) {
      const dir = mkdtempSync(join(tmpdir(), 'assay-eval-batch-'));
      const file = join(dir, 'input.jsonl');
      try {
        const body = (l: DatasetLine) =>
          writeRequest({ state: l.state, questions: l.questions, model: model ?? DEFAULT_MODEL } as never, l.order);
        writeFileSync(file, lines.map((l, i) => `{"custom_id":"line-${i + 1}","body":${body(l)}}\n`).join(''));
        const created = await api.create(file);
        const bar = progressBar({ write: (t) => ctx.io.err(t), isTTY: ctx.io.errIsTTY });
        for (;;) {
          const b = await api.get(created.id);
          const done = b.request_counts.completed + b.request_counts.failed;
          if (b.request_counts.total > 0)
            bar.update(done, b.request_counts.total, () => `${done}/${b.request_counts.total} lines ${label} batch`);
          if (BATCH_ENDED.includes(b.status)) {
            bar.done();
            if (b.status !== 'completed')
              throw new AssayError(
                `batch ${b.id} ended ${b.status}: ${b.errors?.data[0]?.message ?? 'no reason given'}`,
              );
            break;
          }
          await sleep(200);
        }
        const byId = new Map<string, SystemOneResponse | string>();
        let after: string | undefined;
        for (;;) {
          const page = await api.results(created.id, { after, limit: 10_000 });
          for (const text of page.lines) {
            const r = JSON.parse(text) as {
              custom_id: string;
              response?: { status_code: number; body: unknown };
              error?: { message: string };
            };
            const ok = r.response?.status_code === 200 ? SystemOneResponseSchema.safeParse(r.response.body) : undefined;
            byId.set(r.custom_id, ok?.success ? ok.data : (r.error?.message ?? JSON.stringify(r.response?.body)));
          }
          if (page.done) break;
          after = page.cursor;
        }
        lines.forEach((l, i) => answers.set(l, byId.get(`line-${i + 1}`) ?? 'no result for this line'));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    async evaluate(line) {
      const answer = answers.get(line);
      if (answer === undefined) throw new AssayError('the batch has not run (prepare first)');
      if (typeof answer === 'string') throw new AssayError(`the batch line failed: ${answer}`);
      target.model = answer.model;
      return answer;
    },
    close: async () => {},
  };
  return target;
}

// A labeled dataset (JSONL, one request a line): read and checked whole before anything runs.
//
// A line: {"state": ..., "questions": {...} (exactly as the API takes them), "expected": {"<id>":
// true|false (noul) | "<option>" (choice) | <level> (score)}, "tags": ["..."] (optional)}.
import { readFileSync } from 'node:fs';
import type { Question, SentOrder } from '../../protocol/index.js';
import { questionOrder, requestErrors, sentOrder } from '../../protocol/index.js';

export interface DatasetLine {
  state: unknown;
  questions: Record<string, Question>;
  /** The order the line lists its questions and options in (a parsed object lists "1" before "3"): the order they are asked in. */
  order?: SentOrder;
  expected: Record<string, unknown>;
  tags: string[];
}

export class DatasetError extends Error {}

/** Parses and checks every line (request shape, one label per question of the right kind). */
export function readDataset(file: string, model: string): DatasetLine[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new DatasetError(
      `cannot read --dataset ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  const out: DatasetLine[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const where = `${file}:${i + 1}`;
    let v: { state?: unknown; questions?: unknown; expected?: unknown; tags?: unknown };
    try {
      v = JSON.parse(raw) as typeof v;
    } catch (e) {
      throw new DatasetError(`${where}: not JSON (${(e as Error).message})`);
    }
    const invalid = requestErrors({ state: v.state, model, questions: v.questions });
    if (invalid.length)
      throw new DatasetError(`${where}: ${invalid.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; ')}`);
    const questions = v.questions as Record<string, Question>;
    const expected = (v.expected ?? {}) as Record<string, unknown>;
    for (const [id, q] of Object.entries(questions)) {
      const e = expected[id];
      const ok =
        q.type === 'noul'
          ? typeof e === 'boolean'
          : q.type === 'choice'
            ? typeof e === 'string' && Object.prototype.hasOwnProperty.call(q.criteria, e)
            : Number.isInteger(e) && (e as number) >= 0 && (e as number) < q.criteria.length;
      if (!ok)
        throw new DatasetError(
          `${where}: expected.${id} must be ${q.type === 'noul' ? 'true or false' : q.type === 'choice' ? 'one of the option names' : `a level from 0 to ${q.criteria.length - 1}`}`,
        );
    }
    const tags = Array.isArray(v.tags) ? v.tags.map(String) : [];
    out.push({ state: v.state, questions, order: questionOrder(questions, sentOrder(raw)), expected, tags });
  });
  if (out.length === 0) throw new DatasetError(`${file}: no lines`);
  return out;
}

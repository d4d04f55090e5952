// assay batch looks at its input's first line before sending anything: a file that is not a batch
// input (a labeled dataset, plain requests, not JSON) is refused with what it is and how to
// convert it, instead of a whole upload answered `no_valid_line` (the server checks every line).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** The first non-blank line of a file (its first 1 MiB at most), or undefined for an empty file. */
async function firstLine(file: string): Promise<{ text: string; line: number } | undefined> {
  const lines = createInterface({ input: createReadStream(file, { end: 1 << 20 }), crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const text of lines) {
      n++;
      if (text.trim() !== '') return { text, line: n };
    }
  } finally {
    lines.close();
  }
  return undefined;
}

const SHAPE = 'a batch input line is {"custom_id": "<your id>", "body": {<a POST /v1/systemone request>}}';

/** Why FILE is not a batch input, from its first line (with how to convert it), or undefined when it looks like one. */
export async function explainFirstLine(file: string): Promise<string | undefined> {
  const first = await firstLine(file);
  if (!first) return `${file} has no line: ${SHAPE}`;
  const where = `${file} line ${first.line}`;
  let value: unknown;
  try {
    value = JSON.parse(first.text);
  } catch (e) {
    return `${where} is not JSON (${(e as Error).message}): ${SHAPE}, one a line`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `${where} is not a JSON object: ${SHAPE}`;
  const record = value as Record<string, unknown>;
  if ('custom_id' in record && 'body' in record) return undefined;
  if ('state' in record && 'questions' in record) {
    const labeled = 'expected' in record;
    return [
      `${where} is ` +
        `${labeled ? 'a labeled dataset line ({"state", "questions", "expected"}: the shape of assay eval --dataset)' : 'a bare request ({"state", "questions"})'}, ` +
        `not a batch input line: ${SHAPE}.`,
      labeled
        ? `To run a labeled dataset as a batch and get its quality report: assay eval --dataset ${file} --url URL --batch.`
        : undefined,
      `To convert it: jq -c '{custom_id: "line-\\(input_line_number)", body: (del(.expected, .tags))}' ${file} > batch.jsonl`,
    ]
      .filter(Boolean)
      .join('\n');
  }
  const missing = ['custom_id', 'body'].filter((k) => !(k in record));
  return `${where} has no ${missing.join(' and no ')} (it has ${Object.keys(record).slice(0, 5).join(', ') || 'no field'}): ${SHAPE}`;
}

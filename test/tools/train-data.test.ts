// `npm run train:tiny-tasks` starts with tools/train/write-data.ts: the held-out lines it writes are
// the repository's examples/tiny-tasks-heldout.jsonl (the playground's one-click tickets, the
// quality docs' dataset), byte for byte, so a rerun of the training leaves that file as shipped.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { HELDOUT_FILE, HELDOUT_SEED } from '../../tools/train/write-data.js';
import { generateLines } from '../../tools/train/tiny-tasks.js';

it("write-data.ts writes the held-out lines to the repository's examples/, as they are committed", () => {
  expect(HELDOUT_FILE).toBe(resolve('examples/tiny-tasks-heldout.jsonl'));
  const committed = readFileSync('examples/tiny-tasks-heldout.jsonl', 'utf8');
  const lines = generateLines(committed.trim().split('\n').length, HELDOUT_SEED);
  expect(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`).toBe(committed);
});

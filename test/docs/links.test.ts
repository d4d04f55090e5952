// The README and docs/ stay true: every relative link reaches a file of the repository, and every
// #anchor a heading of that file (GitHub's slugs). Links to the web are not fetched (no internet).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pages = [
  'README.md',
  'bench/README.md',
  'models/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const out = new Set<string>();
  let fence = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    const m = !fence && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(slug(m[1]!.replace(/`/g, '')));
  }
  return out;
}

/** Markdown links outside code: [text](target). */
function links(file: string): string[] {
  let fence = false;
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fence = !fence;
    if (fence) continue;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]!);
  }
  return out;
}

describe('documentation links', () => {
  it.each(pages)('%s: every relative link and anchor resolves', (page) => {
    const file = join(ROOT, page);
    const broken: string[] = [];
    for (const target of links(file)) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const to = path === '' ? file : resolve(dirname(file), path);
      if (!existsSync(to)) broken.push(`${target} (no ${relative(ROOT, to)})`);
      else if (anchor && to.endsWith('.md') && !anchors(to).has(anchor)) broken.push(`${target} (no heading #${anchor} in ${relative(ROOT, to)})`);
    }
    expect(broken).toEqual([]);
  });

  it('the README stays the front door: at most ~300 lines, the two commands, a link to every docs page', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
    for (const page of pages.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md')) expect(readme, page).toContain(`](${page})`);
  });
});

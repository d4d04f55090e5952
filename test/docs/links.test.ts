// The README and docs/ stay true: every relative link reaches a file of the repository, and every
// #anchor a heading of that file (GitHub's slugs); every "above"/"below" and "see <Section>" pointer
// finds what it names on its own page, on the side it says; no page names what a user of the package
// never has (a spec section number, a facts file, a sibling shared/ folder, the machine the project
// was built on, issue numbers, notes about earlier changes, bench sections by number); the
// Dockerfile's and deploy/'s `page.md "Heading"` pointers find their heading. Links to the web are
// not fetched.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  'bench/README.md',
  'models/README.md',
  'models/trained/README.md',
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

/** Prose lines (outside fences), with their line numbers; inline code kept or blanked. */
function prose(file: string, keepCode = false): Array<[number, string]> {
  let fence = false;
  const out: Array<[number, string]> = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.startsWith('```')) fence = !fence;
      else if (!fence) out.push([i, keepCode ? line : line.replace(/`[^`]*`/g, (c) => c.replace(/[^`]/g, ' '))]);
    });
  return out;
}

/** Headings and bold phrases of a page, with their line numbers: what a pointer may name. */
function landmarks(file: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const [i, line] of prose(file, true)) {
    const h = /^#{1,6} (.*)$/.exec(line);
    if (h) out.push([i, slug(h[1]!.replace(/`/g, ''))]);
    for (const b of line.matchAll(/\*\*([^*]+)\*\*/g)) out.push([i, slug(b[1]!.replace(/`/g, ''))]);
  }
  return out;
}

const STOP = new Set([
  'the',
  'a',
  'an',
  'see',
  'in',
  'as',
  'and',
  'of',
  'one',
  'ones',
  'those',
  'these',
  'that',
  'is',
  'are',
  'listed',
  'shown',
  'described',
  'given',
  'story',
  'details',
]);

/** Pointers at a page's structure (a table, a fenced block, an image) must have one on that side. */
const STRUCTURE: Record<string, RegExp> = {
  table: /^\|/,
  arrow: /^```/,
  diagram: /^```|^!\[/,
  output: /^```/,
  block: /^```/,
  command: /^```/,
  image: /^!\[/,
  screenshot: /^!\[/,
};

/**
 * Problems with the page's "above"/"below" and "see <Section>" pointers. A named pointer ("Title"
 * above, **Title** below, see Title) must name a heading or bold phrase of the same page, on the
 * side it says; any other ("the table below", `rotN` (below)) must find the word it points with on
 * that side of the page.
 */
function pointerProblems(file: string): string[] {
  const lines = prose(file, true);
  const all = readFileSync(file, 'utf8').split('\n');
  const marks = landmarks(file);
  const problems: string[] = [];
  const side = (at: number, dir: string) => (dir === 'above' ? (i: number) => i < at : (i: number) => i > at);
  for (const [at, line] of lines) {
    for (const m of line.matchAll(/(?:"([^"]+)"|\*\*([^*]+)\*\*)\s+\(?(above|below)\b/g)) {
      const name = slug((m[1] ?? m[2])!.replace(/`/g, ''));
      if (!marks.some(([i, s]) => side(at, m[3]!)(i) && s === name))
        problems.push(
          `line ${at + 1}: "${m[1] ?? m[2]}" ${m[3]}: no such heading or bold phrase ${m[3]} it on this page`,
        );
    }
    for (const m of line.matchAll(/\bsee ([A-Z][\w-]*(?: [\w-]+){0,4})/g)) {
      if (line.slice(m.index! + 4).startsWith('[')) continue;
      const words = m[1]!.split(' ');
      const found = words.some((_, n) => marks.some(([, s]) => s === slug(words.slice(0, n + 1).join(' '))));
      if (!found && !/^(README|docs\/|SPEC)/.test(m[1]!))
        problems.push(
          `line ${at + 1}: "see ${m[1]}": no heading or bold phrase of that name on this page (link to it instead)`,
        );
    }
    const plain = line.replace(/"[^"]*"\s+\(?(above|below)\b|\*\*[^*]+\*\*\s+\(?(above|below)\b/g, '');
    for (const m of plain.matchAll(/\b(above|below)\b/g)) {
      const before = plain
        .slice(0, m.index)
        .replace(/[`(),:;]/g, ' ')
        .trim()
        .split(/\s+/)
        .filter((w) => w && !STOP.has(w.toLowerCase()));
      const word = before[before.length - 1]?.toLowerCase().replace(/s$/, '');
      if (!word) {
        problems.push(`line ${at + 1}: "${m[1]}" points at nothing it names`);
        continue;
      }
      const shape = STRUCTURE[word];
      const onSide = all
        .filter((_, i) => side(at, m[1]!)(i))
        .some((l) => (shape ? shape.test(l) : l.toLowerCase().includes(word)));
      if (!onSide) problems.push(`line ${at + 1}: "${word} ${m[1]}": no "${word}" ${m[1]} it on this page`);
    }
  }
  return problems;
}

/** What a user of the package never has; each with why. */
const FORBIDDEN: Array<[RegExp, string]> = [
  [/\bSPEC\b|§/, 'a spec section'],
  [/FACTS(\.md)?\b|facts file/, 'the facts file'],
  [/(^|[\s(`'"])(\.\.\/)*shared\//, 'a sibling shared/ folder'],
  [
    /\bworkplace\b|\bthis machine\b|\bthis box\b|\bon this (CPU|host)\b|\bthis CPU-only install\b|\b(measured|trained|generated) here\b|\bhere \(\d+ cores?\)|\bdoes not run here\b/i,
    'the machine the project was built on',
  ],
  [/\b[Ii]ssue #?\d+|\(#\d+\)/, 'an issue number'],
  [
    /\bused to (fail|crash|return|give|be)\b|\bno longer\b|\bsince the .* change\b|\ballowed on \S+ again\b|\bthe previous (server|version)\b/,
    'a note about an earlier change',
  ],
  [/\b(bench|benchmark)\b[^.]*\bsection \d+\b/i, 'a benchmark section by number (sections have names)'],
];

describe('documentation links', () => {
  it.each(pages)('%s: every relative link and anchor resolves', (page) => {
    const file = join(ROOT, page);
    const broken: string[] = [];
    for (const target of links(file)) {
      if (/^[a-z]+:/i.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const to = path === '' ? file : resolve(dirname(file), path);
      if (!existsSync(to)) broken.push(`${target} (no ${relative(ROOT, to)})`);
      else if (anchor && to.endsWith('.md') && !anchors(to).has(anchor))
        broken.push(`${target} (no heading #${anchor} in ${relative(ROOT, to)})`);
    }
    expect(broken).toEqual([]);
  });

  it.each(pages)('%s: every "above"/"below" and "see <Section>" pointer finds what it names on this page', (page) => {
    expect(pointerProblems(join(ROOT, page))).toEqual([]);
  });

  it.each(pages)('%s: names nothing a user of the package never has', (page) => {
    const found: string[] = [];
    readFileSync(join(ROOT, page), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const [re, what] of FORBIDDEN)
          if (re.test(line)) found.push(`line ${i + 1}: ${what}: ${line.trim().slice(0, 120)}`);
      });
    expect(found).toEqual([]);
  });

  it('the pointer check catches a stale pointer and a forbidden reference', () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-links-'));
    const page = join(dir, 'page.md');
    writeFileSync(
      page,
      '# Page\n\n## Setup\n\nThe request above; "Measuring quality" above; see Scale-out.\n\n| a |\n|---|\n',
    );
    expect(pointerProblems(page)).toHaveLength(3);
    writeFileSync(page, '# Page\n\n## Setup\n\nThe table below; "Setup" above; see Setup.\n\n| a |\n|---|\n');
    expect(pointerProblems(page)).toEqual([]);
    expect(
      FORBIDDEN.filter(([re]) => re.test('numbers in shared/FACTS.md (SPEC §2.5, issue 12)')).map(([, w]) => w),
    ).toEqual(['a spec section', 'the facts file', 'a sibling shared/ folder', 'an issue number']);
    expect(
      FORBIDDEN.filter(([re]) =>
        re.test('Measured here (2 cores), allowed on int8 again; the bench: section 5 prints it'),
      ).map(([, w]) => w),
    ).toEqual([
      'the machine the project was built on',
      'a note about an earlier change',
      'a benchmark section by number (sections have names)',
    ]);
  });

  it('the Dockerfile and deploy/ files point at pages and headings that exist (`docs/x.md "Heading"`)', () => {
    const files = [
      'Dockerfile.gpu',
      ...readdirSync(join(ROOT, 'deploy'), { recursive: true, encoding: 'utf8' })
        .filter((f) => /\.(ya?ml|ts|conf)$/.test(f))
        .map((f) => `deploy/${f}`),
    ];
    const stale: string[] = [];
    for (const f of files)
      for (const m of readFileSync(join(ROOT, f), 'utf8').matchAll(/\b((?:[\w-]+\/)*[\w-]+\.md|README) "([^"]+)"/g)) {
        const page = join(ROOT, m[1] === 'README' ? 'README.md' : m[1]!);
        if (!existsSync(page) || ![...anchors(page)].some((a) => a.startsWith(slug(m[2]!))))
          stale.push(`${f}: ${m[1]} "${m[2]}"`);
      }
    expect(files.length).toBeGreaterThan(1);
    expect(stale).toEqual([]);
  });

  it('the README stays the front door: at most ~300 lines, the two commands, a link to every docs page', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
    for (const page of pages.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md'))
      expect(readme, page).toContain(`](${page})`);
  });
});

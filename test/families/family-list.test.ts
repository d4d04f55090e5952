// A family is one folder and one line of the list: every family is described in its own folder
// (src/engine/families/<folder>/descriptor.ts) and listed once (families/list.ts), and no file of
// src/ names a family outside its folder and the list, so every other list of families (detection,
// loading, the planner's contracts, the hub fetcher's selection, /metrics, `assay models`, the
// file-formats page) is derived from the list and cannot drift from it.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAMILIES } from '../../src/engine/families/list.js';

const SRC = join(import.meta.dirname, '..', '..', 'src');
const FAMILIES_DIR = join(SRC, 'engine', 'families');

/** Every .ts file under a folder, as paths relative to src/ with '/' separators. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(SRC, join(e.parentPath, e.name)).split(sep).join('/'));
}

/** The folder whose descriptor.ts describes the family of this name. */
function folderOf(name: string): string | undefined {
  const hits = sources(FAMILIES_DIR).filter(
    (f) => f.endsWith('/descriptor.ts') && readFileSync(join(SRC, f), 'utf8').includes(`name: '${name}'`),
  );
  return hits.length === 1 ? hits[0]!.slice(0, -'descriptor.ts'.length) : undefined;
}

/**
 * How a name is found in a file: a hyphenated name (`kev-pointer`) anywhere, as a word; a one-word
 * name (`decoder`, also an ordinary word) only as a string literal.
 */
function pattern(name: string): RegExp {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return name.includes('-') ? new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`) : new RegExp(`['"\`]${escaped}['"\`]`);
}

describe('the families', () => {
  it('each has one folder with its descriptor, and one line in the list', () => {
    const list = readFileSync(join(FAMILIES_DIR, 'list.ts'), 'utf8');
    for (const f of FAMILIES) {
      const folder = folderOf(f.name);
      expect(folder, f.name).toBeDefined();
      const imported = folder!.slice('engine/families/'.length);
      expect(list.match(new RegExp(`from '\\./${imported}descriptor\\.js'`, 'g')), f.name).toHaveLength(1);
    }
    expect(new Set(FAMILIES.map((f) => f.name)).size).toBe(FAMILIES.length);
  });

  it('no file of src/ names a family (or a layout id of it) outside its folder and the list', () => {
    const files = sources(SRC).filter((f) => !f.startsWith('web/'));
    const found: string[] = [];
    for (const f of FAMILIES) {
      const folder = folderOf(f.name)!;
      for (const name of [f.name, ...(f.layoutIds ?? [])]) {
        const re = pattern(name);
        for (const file of files) {
          if (file.startsWith(folder) || file === 'engine/families/list.ts') continue;
          const lines = readFileSync(join(SRC, file), 'utf8').split('\n');
          lines.forEach((line, i) => {
            if (re.test(line)) found.push(`${file}:${i + 1}: ${name}`);
          });
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('can fail: the check finds a family named in a file outside its folder', () => {
    const [f] = FAMILIES.filter((d) => d.name.includes('-'));
    expect(pattern(f!.name).test(`const x = '${f!.name}';`)).toBe(true);
    expect(pattern(f!.name).test(`// the ${f!.name}s family`)).toBe(false);
    expect(pattern('decoder').test(`family === 'decoder'`)).toBe(true);
    expect(pattern('decoder').test('the decoder engine')).toBe(false);
  });

  it('every refusal a family throws is a 422 that crosses threads as a BudgetError', async () => {
    const { BudgetError } = await import('../../src/engine/errors.js');
    for (const f of FAMILIES)
      for (const r of f.refusals) expect(r.prototype, `${f.name}: ${r.name}`).toBeInstanceOf(BudgetError);
  });
});

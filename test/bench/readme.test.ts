// bench/README.md is generated from the section registry (bench/sections.ts) and the flags: a section
// or flag added without `npm run docs:bench` leaves it stale, and this fails.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { benchHelp, benchReadme } from '../../bench/docs.js';
import { SECTIONS } from '../../bench/sections.js';
import { README } from '../../bench/write-readme.js';

describe('bench reference', () => {
  it('bench/README.md is the one the registry generates (npm run docs:bench)', () => {
    expect(readFileSync(README, 'utf8')).toBe(benchReadme());
  });

  it('--help and the README name every section and every flag', () => {
    const help = benchHelp();
    for (const s of SECTIONS) {
      expect(help).toContain(`  ${s.id} `);
      expect(benchReadme()).toContain(`### \`${s.id}\``);
    }
    for (const flag of ['--quick', '--only', '--out', '--threads', '--help']) expect(help).toContain(flag);
  });
});

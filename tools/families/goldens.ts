// Rewrites one family's goldens from its independent reference: `npm run goldens -- <family> [ARGS...]`
// runs tools/families/<family>/goldens.ts (or tools/trunks/goldens.ts for `trunks`, the causal-row
// families on real trunks) with ARGS, as `npx tsx` of that file would. Without a family, or with an
// unknown one, it lists the families that have a goldens generator and exits 2. Goldens are written
// only when asked: a test never regenerates them, and a change that moves a golden says why.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './kit/goldens-kit.js';

/** Each family with a goldens generator, and the generator's path. */
export function goldensGenerators(): Map<string, string> {
  const here = join(ROOT, 'tools', 'families');
  const found = new Map<string, string>();
  for (const e of readdirSync(here, { withFileTypes: true })) {
    const file = join(here, e.name, 'goldens.ts');
    if (e.isDirectory() && existsSync(file)) found.set(e.name, file);
  }
  found.set('trunks', join(ROOT, 'tools', 'trunks', 'goldens.ts'));
  return new Map([...found].sort(([a], [b]) => a.localeCompare(b)));
}

const [family, ...args] = process.argv.slice(2);
const generators = goldensGenerators();
const file = family ? generators.get(family) : undefined;
if (!file) {
  if (family) console.error(`no goldens generator for "${family}"`);
  console.error(`usage: npm run goldens -- <family> [args...]\nfamilies: ${[...generators.keys()].join(', ')}`);
  process.exit(2);
}
// process.execArgv carries tsx's loader: the generator runs as `npx tsx FILE ARGS` would run it.
const run = spawnSync(process.execPath, [...process.execArgv, file, ...args], { stdio: 'inherit' });
process.exit(run.status ?? 1);

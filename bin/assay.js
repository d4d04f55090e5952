#!/usr/bin/env node
// The `assay` command: runs the compiled CLI in dist/ (`npm run build` writes it; `npm ci` and
// `npm start` build it). From a source checkout without a build, `npx tsx src/cli.ts` runs the same.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('assay: dist/ is missing: run `npm run build` first (npm ci and npm start do)\n');
  process.exit(1);
}
const { runCli } = await import(cli.href);
await runCli(process.argv.slice(2));

// `npm run bench`: runs the sections of bench/sections.ts one at a time (never two heavy things at
// once); a failing section is reported and the rest still run. `npm run bench -- --help` lists the
// flags and the sections; bench/README.md says the same, generated from the same registry.
import { parseArgs } from 'node:util';
import { cpuKernels } from '../src/internal.js';
import { createContext, type SectionResult } from './lib/context.js';
import { writeReport, type SectionFailure } from './report.js';
import { SECTION_IDS, SECTIONS } from './sections.js';
import { benchHelp } from './docs.js';
import { OPTIONS } from './flags.js';

async function main(args: string[]): Promise<number> {
  let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; args: string[] }>>['values'];
  try {
    ({ values } = parseArgs({ args, options: OPTIONS, allowPositionals: false }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${benchHelp()}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${benchHelp()}\n`);
    return 0;
  }
  const quick = values.quick;
  const picked = values.only?.split(',');
  const only = picked ?? SECTION_IDS;
  const unknown = only.filter((s) => !SECTION_IDS.includes(s));
  if (unknown.length > 0) {
    process.stderr.write(`unknown section(s) ${unknown.join(', ')}; known: ${SECTION_IDS.join(', ')}\n`);
    return 2;
  }
  const threads = Number(values.threads);
  const ctx = createContext({ quick, threads });
  const started = new Date();
  const t0 = performance.now();
  ctx.log(
    `assay bench${quick ? ' --quick (smaller states, fewer rounds; the full run is npm run bench)' : ''}: ${only.join(', ')}; ${threads} threads`,
  );
  const kernels = await cpuKernels();
  ctx.log(`${kernels.cpu}: int8 ${kernels.int8}; 4-bit ${kernels.q4}`);
  const results: SectionResult[] = [];
  const failures: SectionFailure[] = [];
  for (const id of only) {
    ctx.log(`[${id}]`);
    const s0 = performance.now();
    try {
      results.push(await (await SECTIONS.find((s) => s.id === id)!.load())(ctx));
    } catch (error) {
      const message = (error as Error).stack ?? String(error);
      ctx.log(`  FAILED: ${message}`);
      failures.push({ id, error: (error as Error).message });
    }
    ctx.log(`  done in ${((performance.now() - s0) / 1000).toFixed(0)} s`);
  }
  const command = `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const out = writeReport(
    { quick, command, threads, kernels, started, seconds: (performance.now() - t0) / 1000, only: picked },
    results,
    failures,
    values.out,
  );
  process.stdout.write(`${out.markdown}\n`);
  ctx.log(`wrote ${out.jsonPath}\n      ${out.mdPath}${out.latest ? `\n      ${out.latest}` : ''}`);
  return failures.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));

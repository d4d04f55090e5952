// `npm run bench` (about 20 minutes here) / `npm run bench -- --quick` (about 2).
// Options: --quick, --only shared,roofline,cache,single-question,transformersjs,workloads,http,serving,engine-death,scaleout,packing,peers, --out <dir>, --threads N.
// An --only run writes its own files (…-only-<sections>.json/.md) and leaves latest.md alone.
// Sections run one at a time (never two heavy things at once); a failing section is reported and
// the rest still run.
import { createContext, type BenchContext, type SectionResult } from './lib/context.js';
import { writeReport, type SectionFailure } from './report.js';
import { cpuKernels } from '../src/internal.js';

type Section = (ctx: BenchContext) => Promise<SectionResult>;

const SECTIONS: Record<string, () => Promise<Section>> = {
  shared: async () => (await import('./engine/shared.js')).sharedSection,
  roofline: async () => (await import('./roofline.js')).rooflineSection,
  cache: async () => (await import('./engine/cache.js')).cacheSection,
  'single-question': async () => (await import('./engine/single-question.js')).singleQuestionSection,
  transformersjs: async () => (await import('./transformersjs.js')).transformersSection,
  workloads: async () => (await import('./workloads.js')).workloadsSection,
  http: async () => (await import('./http.js')).httpSection,
  serving: async () => (await import('./serving.js')).servingSection,
  'engine-death': async () => (await import('./engine-death.js')).engineDeathSection,
  scaleout: async () => (await import('./scaleout.js')).scaleoutSection,
  packing: async () => (await import('./engine/packing.js')).packingSection,
  peers: async () => (await import('./peers/section.js')).peersSection,
};

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(args: string[]): Promise<number> {
  const quick = args.includes('--quick');
  const picked = option(args, '--only')?.split(',');
  const only = picked ?? Object.keys(SECTIONS);
  const unknown = only.filter((s) => !(s in SECTIONS));
  if (unknown.length > 0) {
    process.stderr.write(`unknown section(s) ${unknown.join(', ')}; known: ${Object.keys(SECTIONS).join(', ')}\n`);
    return 2;
  }
  const threads = Number(option(args, '--threads') ?? 2);
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
      results.push(await (await SECTIONS[id]!())(ctx));
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
    option(args, '--out'),
  );
  process.stdout.write(`${out.markdown}\n`);
  ctx.log(`wrote ${out.jsonPath}\n      ${out.mdPath}${out.latest ? `\n      ${out.latest}` : ''}`);
  return failures.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));

// `npm run bench -- --help` and bench/README.md, generated from the section registry
// (bench/sections.ts) and the flags (bench/flags.ts): a section or a flag is documented where it is
// declared. npm run docs:bench rewrites the README; test/bench/readme.test.ts fails when it is stale.
import { FLAG_DOCS, OPTIONS } from './flags.js';
import { SECTIONS } from './sections.js';

function flagName(name: keyof typeof OPTIONS): string {
  const short = 'short' in OPTIONS[name] ? `-${OPTIONS[name].short}, ` : '';
  const arg = FLAG_DOCS[name].arg;
  return `${short}--${name}${arg ? ` ${arg}` : ''}`;
}

const FLAGS = Object.keys(OPTIONS) as Array<keyof typeof OPTIONS>;

/** "about 5 min" / "about 25 s". */
function about(seconds: number): string {
  return seconds >= 120 ? `about ${Math.round(seconds / 60)} min` : `about ${seconds} s`;
}

const total = (which: 'full' | 'quick') => SECTIONS.reduce((a, s) => a + s.seconds[which], 0);

export function benchHelp(): string {
  const flags = FLAGS.map((f) => `  ${flagName(f).padEnd(26)}${FLAG_DOCS[f].doc.replaceAll('`', '')}`);
  const width = Math.max(...SECTIONS.map((s) => s.id.length)) + 2;
  const sections = SECTIONS.map(
    (s) => `  ${s.id.padEnd(width)}${about(s.seconds.full)} (--quick ${about(s.seconds.quick).replace('about ', '')})`,
  );
  return `Usage: npm run bench [-- options]

Runs the benchmark sections one at a time and writes bench/results/<date>-<machine>[-quick][-only-<names>].json
and .md (a full run of every section, none failing, also bench/results/latest.md). bench/README.md says
what each section measures.

${flags.join('\n')}

Sections (--only NAME; times on a 2-core x86 machine):
${sections.join('\n')}`;
}

const HEADER = `# Benchmarks

[← README](../README.md) · [all docs](../docs/README.md)

<!-- Generated from bench/sections.ts and bench/flags.ts by \`npm run docs:bench\`: edit those, not this file. -->`;

export function benchReadme(): string {
  const flags = FLAGS.map((f) => `| \`${flagName(f)}\` | ${FLAG_DOCS[f].doc} |`);
  const sections = SECTIONS.flatMap((s) => [
    `### \`${s.id}\``,
    '',
    s.measures,
    '',
    `- \`--quick\`: ${s.quick}.`,
    `- Takes ${about(s.seconds.full)} (\`--quick\`: ${about(s.seconds.quick)}) on a 2-core x86 machine.`,
    ...(s.measured ? [`- Measured: ${s.measured}`] : []),
    `- Alone: \`npm run bench -- --only ${s.id}\` writes \`bench/results/<date>-<machine>-only-${s.id}.json\` and \`.md\`; in any run its results are the \`sections\` entry with \`"id": "${s.id}"\`.`,
    '',
  ]);
  return `${HEADER}

\`npm run bench\` runs the ${SECTIONS.length} sections below one at a time (never two heavy things at once; a
failing section is reported and the rest still run), ${about(total('full'))} in all on a 2-core x86
machine (\`--quick\`: ${about(total('quick'))}). It generates the synthetic models it needs first, with
progress. The models are synthetic Qwen2.5-0.5B-shaped decoders (random weights; real shapes, kernels
and tokenizer; see [models/README.md](../models/README.md)), int8 and 2 onnxruntime threads unless a
section says otherwise.

Machines are shared and noisy, so every comparison is a ratio measured interleaved inside one run (A,
B, A, B, …: both sides see the same noise), reported as the median of per-round ratios with its
p10–p90. Every run prints and records the CPU and the int8 / 4-bit kernel path onnxruntime takes on
it: numbers from two machines are not comparable. \`test/bench/smoke.test.ts\` runs one tiny bench in
CI and checks the result file's fields, never timings.

## Flags

\`npm run bench -- --help\` prints them, with the sections.

| flag | meaning |
| --- | --- |
${flags.join('\n')}

## Sections

${sections.join('\n')}
## Result files

Each run writes \`bench/results/<date>-<machine>[-quick][-only-<names>].json\` and \`.md\` (\`<machine>\`
is the CPU model and core count); a full run of every section with no failure also copies its \`.md\`
to [results/latest.md](results/latest.md). The JSON holds \`date\`, \`machine\` (CPU, cores, memory,
Node, onnxruntime-node and transformers.js versions), \`kernels\` (the int8 and 4-bit paths),
\`command\`, \`quick\`, \`threads\`, \`seconds\`, every section's \`targets\` (name, goal, measured
value, met), \`sections\` (each with its \`id\`, \`title\`, \`config\`, \`results\`, \`notes\`,
\`markdown\` and \`seconds\`) and \`failures\`. The \`.md\` is the same as tables.

What was measured over time, run by run and with the reasoning behind each figure:
[results/HISTORY.md](results/HISTORY.md).

## Scripts outside the sections

Run by hand with \`npx tsx\`; each says its flags in its first lines.

| script | measures |
| --- | --- |
| \`bench/serving.ts\` | the serving section alone, against another checkout (\`--repo DIR\`) or a running server (\`--url URL\`, with \`ASSAY_API_KEY\`) |
| \`bench/engine/load-memory.ts\` | peak resident memory while loading a single-file int8 model, in a fresh process (\`--repo DIR\`) |
| \`bench/engine/tokenize-runs.ts\` | tokenizer time on pathological runs (\`--repo DIR\`) |
| \`bench/engine/per-token-error.ts\` | a dynamic int8 export per tensor (as exported) and per token against its fp32 twin: max \\|Δlogit\\|, max \\|ΔP\\|, rms Δlogit, mean KL |
| \`bench/peers/check-llamacpp.ts\` | \`npm run check:llamacpp\`: llama.cpp's logits against ours on the same weights and token ids |
| \`bench/peers/q4-error.ts\` | the accuracy cost of running 4-bit weights through the int8 kernels, against the fp32 twin (\`--levels\`: the largest \\|int8\\| of the converted weights) |
| \`bench/peers/q4-products.ts\` | one 0.5b-shaped matrix product at M = 1 … 512 rows per form: MatMulNBits, the export's per-tensor int8, the per-token int8 form on 8-bit and on converted 4-bit weights |
| \`bench/peers/q4-prefill.ts\` | q4 prefill on its two paths next to int8, interleaved |
| \`bench/sdk-retries.ts\` | 12 concurrent calls with the official TypeScript SDK's default retries against \`assay serve --max-queue 1\`: how many are answered, and what each attempt was told (\`--fresh\`, \`--repo DIR\`) |
`;
}

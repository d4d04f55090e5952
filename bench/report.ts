// Writes a run's results: bench/results/<date>-<machine>[-quick][-only-<sections>].json and .md, and
// (full runs of every section) bench/results/latest.md.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KernelPaths } from '../src/internal.js';
import type { SectionResult, Target } from './lib/context.js';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export interface RunInfo {
  quick: boolean;
  command: string;
  threads: number;
  started: Date;
  seconds: number;
  /** The int8 / 4-bit kernels onnxruntime runs on this CPU (numerics and speed depend on them). */
  kernels: KernelPaths;
  /** The sections of an --only run: its files are named after them, and latest.md is left alone. */
  only?: string[];
}

export interface SectionFailure {
  id: string;
  error: string;
}

function version(pkg: string): string {
  try {
    const path = fileURLToPath(new URL(`../node_modules/${pkg}/package.json`, import.meta.url));
    return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export function machineInfo() {
  const cpu = cpus();
  const model = cpu[0]?.model.trim() ?? 'unknown cpu';
  return {
    name: `${model
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')}-${cpu.length}c`,
    cpu: model,
    cores: cpu.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    hostname: hostname(),
    node: process.version,
    onnxruntimeNode: version('onnxruntime-node'),
    transformersJs: version('@huggingface/transformers'),
  };
}

export function buildReport(info: RunInfo, sections: SectionResult[], failures: SectionFailure[]) {
  const machine = machineInfo();
  const targets: Target[] = sections.flatMap((s) => s.targets);
  const json = {
    date: info.started.toISOString(),
    machine,
    kernels: info.kernels,
    command: info.command,
    quick: info.quick,
    threads: info.threads,
    seconds: Math.round(info.seconds),
    targets,
    sections,
    failures,
  };
  const lines: string[] = [
    `# Assay benchmarks${info.quick ? ' (--quick)' : ''}`,
    '',
    `- Date: ${info.started.toISOString()}`,
    `- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB (shared and noisy: every comparison is a ratio inside this run, measured interleaved)`,
    `- CPU kernels: int8 ${info.kernels.int8}; 4-bit ${info.kernels.q4}; flags ${info.kernels.flags}`,
    `- Command: \`${info.command}\` (${Math.round(info.seconds)} s); onnxruntime-node ${machine.onnxruntimeNode}, ${info.threads} threads; Node ${machine.node}; transformers.js ${machine.transformersJs}`,
    '- Models: synthetic Qwen2.5-0.5B-shaped decoder (random weights, real shapes, kernels and tokenizer; see models/README.md), int8 unless marked.',
    '- Times: median (min–max) in ms; ratios: median of per-round ratios (p10–p90).',
    '',
    '## Targets',
    '',
    '| target | goal | measured | met |',
    '| --- | --- | --- | --- |',
    ...targets.map(
      (t) =>
        `| ${t.name} | ${t.goal} | ${t.value}${t.unit === '×' ? '×' : ` ${t.unit}`}${t.detail ? ` (${t.detail})` : ''} | ${t.met ? 'yes' : '**no**'} |`,
    ),
    '',
  ];
  for (const s of sections) {
    lines.push(`## ${s.title}`, '', s.markdown, '');
    for (const n of s.notes) lines.push(`- ${n}`);
    lines.push(`- Section time: ${Math.round(s.seconds)} s.`, '');
  }
  if (failures.length > 0) {
    lines.push('## Failed sections', '');
    for (const f of failures) lines.push(`- ${f.id}: ${f.error}`);
    lines.push('');
  }
  return { json, markdown: lines.join('\n') };
}

export function writeReport(
  info: RunInfo,
  sections: SectionResult[],
  failures: SectionFailure[],
  outDir = RESULTS_DIR,
) {
  const { json, markdown } = buildReport(info, sections, failures);
  mkdirSync(outDir, { recursive: true });
  const base = `${info.started.toISOString().slice(0, 10)}-${json.machine.name}${info.quick ? '-quick' : ''}${info.only ? `-only-${info.only.join('+')}` : ''}`;
  const jsonPath = join(outDir, `${base}.json`);
  const mdPath = join(outDir, `${base}.md`);
  writeFileSync(jsonPath, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(mdPath, `${markdown}\n`);
  let latest: string | undefined;
  if (!info.quick && !info.only && failures.length === 0) {
    latest = join(outDir, 'latest.md');
    copyFileSync(mdPath, latest);
  }
  return { jsonPath, mdPath, latest, markdown };
}

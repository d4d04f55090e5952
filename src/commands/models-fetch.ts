// assay models fetch <repo id> [--revision R] [--variant V | --split] [--subfolder DIR] [--id ID]
//                    [--alias NAME]... [--default] [--registry FILE] [--dest DIR] [--description TEXT]
//
// Downloads an ONNX export into models/hub/<owner>/<name>/<commit>/ (a decoder in the
// transformers.js, Optimum or onnxruntime-genai layout, a Laya decision model or an NLI
// cross-encoder: the family the repo's files show, by the engine's rules), resuming partial files
// and verifying each against the hub's checksums, then registers the folder in the model registry
// under a versioned id (no `family` field: the engine detects it from the same files). Honours
// HF_ENDPOINT (a mirror or a local hub) and HF_TOKEN (private or gated repos).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  fetchModel,
  formatBytes,
  HubFetchError,
  hubUrlFromEnv,
  VARIANTS,
  type FetchModelResult,
} from '../model-files/index.js';
import { DEFAULT_FAMILY, FAMILIES, parseVariant } from '../engine/index.js';
import { progressBar } from './progress.js';
import { registerModel } from '../registry/index.js';
import { commandFlags, commandHelp, COMMON_FLAGS } from '../config/index.js';
import { parseCommand, resolveIo } from './common.js';

/** models/hub/ of the package (the same depth from src/commands and dist/commands). */
export const DEFAULT_DEST = fileURLToPath(new URL('../../models/hub/', import.meta.url));

/** The row families' paragraphs of the help: what a fetch brings of each (their descriptors'). */
const FETCH_HELP = FAMILIES.flatMap((f) => (f.fetch?.help ? [f.fetch.help] : [])).join('\n');

const FLAGS = commandFlags({
  head: `Usage: assay models fetch <owner/name> [options]

Downloads an ONNX export and registers it in the model registry. The repo's files say which
model family it is, by the rules the engine applies to a folder, and the fetch brings what the
engine loads for that family:
- a decoder: a transformers.js / Optimum export (config.json, tokenizer and template files, and
  one variant's ONNX file under onnx/ or at the root, with its external data), or an
  onnxruntime-genai build (genai_config.json and its model.onnx + model.onnx.data);
${FETCH_HELP}
decision.json (its layout declares the family) and assay.json come along when the repo has them.

Options:`,
  flags: {
    revision: { arg: 'R', doc: 'branch, tag or commit (default main); the folder is named after the commit' },
    variant: {
      arg: 'V',
      doc: `which ONNX file, by its transformers.js dtype suffix: fp32 (model.onnx),
fp16 (_fp16), int8 (_int8, else _quantized), uint8 (_uint8), quantized or
q8 (_quantized), q4 (_q4), q4f16 (_q4f16), bnb4 (_bnb4). Default: int8 for a
decoder; for a Laya or NLI model the first of int8, quantized, fp32, q4, uint8,
fp16, q4f16, bnb4 the repo has. Not for an onnxruntime-genai build (one file)`,
    },
    split: { doc: "a Laya model's split export (encoder.onnx + head.onnx) instead of one graph" },
    subfolder: { arg: 'DIR', doc: 'the repo folder holding the export (genai repos keep one build per folder)' },
    id: {
      arg: 'ID',
      doc: `versioned id to register, e.g. svc-1.14.0
(default: <name>-<variant, split or layout>-<commit[0:7]>, lower case)`,
    },
    alias: { arg: 'NAME', multiple: true, doc: 'point an alias (e.g. svc-latest) at it; repeatable' },
    default: { doc: "make it the registry's default (the model the server loads at startup)" },
    registry: COMMON_FLAGS.registry('registry to update'),
    dest: { arg: 'DIR', doc: 'download root (default models/hub)' },
    description: { arg: 'T', doc: 'description listed by GET /v1/models' },
  },
  column: 21,
  tail: `Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (private or gated repos).
Interrupted downloads resume where they stopped: run the same command again.`,
  positionals: true,
});

export interface FetchCliIo {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream & { isTTY?: boolean };
}

export async function run(argv: string[], io: FetchCliIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const args = parseCommand('models fetch', FLAGS, argv, resolveIo({ stdout, stderr, env }));
  if (typeof args === 'number') return args;
  const { values: o, positionals } = args;
  if (positionals.length !== 1) {
    stderr.write(`expected exactly one repo id, got ${positionals.length}\n\n${commandHelp(FLAGS)}\n`);
    return 2;
  }
  const variant = o.variant === undefined ? undefined : parseVariant(o.variant);
  if (o.variant !== undefined && !variant) {
    stderr.write(`--variant must be one of ${VARIANTS.join(', ')} (q8 = quantized), not "${o.variant}"\n`);
    return 2;
  }
  if (o.split === true && variant) {
    stderr.write('--split and --variant each choose the graph: give one\n');
    return 2;
  }
  const repo = positionals[0]!;
  const registry = path.resolve(args.registry);
  const dest = path.resolve(o.dest ?? DEFAULT_DEST);
  const hubUrl = hubUrlFromEnv(env);
  const bar = progressBar(stderr);
  const log = (line: string) => {
    bar.done();
    stderr.write(`${line}\n`);
  };

  let result: FetchModelResult;
  try {
    log(
      `fetching ${repo}@${o.revision ?? 'main'}${o.subfolder ? `/${o.subfolder}` : ''} ` +
        `(${variant ?? (o.split ? 'split export' : 'default variant')}) from ${hubUrl}`,
    );
    result = await fetchModel({
      repo,
      revision: o.revision,
      variant,
      split: o.split === true,
      subfolder: o.subfolder,
      destRoot: dest,
      hubUrl,
      accessToken: env.HF_TOKEN || undefined,
      onProgress: (p) =>
        bar.update(p.doneBytes, p.totalBytes, (secs) => {
          const rate = secs > 0 ? `${formatBytes(Math.round(p.doneBytes / secs))}/s` : '';
          return `${formatBytes(p.doneBytes)} / ${formatBytes(p.totalBytes)} ${rate} ${p.file}`;
        }),
      log,
    });
    bar.done();
  } catch (e) {
    bar.done();
    if (e instanceof HubFetchError) {
      stderr.write(`assay models fetch: ${e.message}\n`);
      return 1;
    }
    throw e;
  }

  const bytes = result.files.reduce((n, f) => n + f.size, 0);
  const fresh = result.files.filter((f) => f.how !== 'present').length;
  log(`verified ${result.files.length} files (${formatBytes(bytes)}, ${fresh} transferred) in ${result.modelDir}`);
  log(`family ${result.family} (by its ${result.familyFrom}), graph ${result.graph.join(' + ')}`);

  const name = (repo.split('/')[1] ?? repo).toLowerCase();
  const label = result.variant ?? (result.split ? 'split' : result.layout);
  const what = result.family === DEFAULT_FAMILY ? label : `${result.family}, ${label}`;
  const id = o.id ?? `${name}-${label}-${result.commit.slice(0, 7)}`;
  const rel = path.relative(path.dirname(registry), result.modelDir).split(path.sep).join('/');
  try {
    registerModel(
      registry,
      id,
      {
        path: rel,
        ...(result.variant ? { variant: result.variant } : {}),
        description: o.description ?? `${repo} (${what}) at commit ${result.commit.slice(0, 12)}, from ${hubUrl}`,
        release_date: result.lastModified,
      },
      o.alias ?? [],
      o.default === true,
    );
  } catch (e) {
    stderr.write(`assay models fetch: downloaded, but could not register it: ${(e as Error).message}\n`);
    return 1;
  }
  const aliasNote = [o.alias?.length ? `aliases: ${o.alias.join(', ')}` : '', o.default ? 'default' : '']
    .filter(Boolean)
    .join('; ');
  log(`registered ${id}${aliasNote ? ` (${aliasNote})` : ''} in ${registry}`);
  stdout.write(
    `${JSON.stringify({ id, path: rel, dir: result.modelDir, commit: result.commit, family: result.family, variant: result.variant, layout: result.layout })}\n`,
  );
  return 0;
}

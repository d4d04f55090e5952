// npm run models:fetch -- <repo id> [--revision R] [--variant fp32|int8|fp16|q4] [--id ID]
//                         [--alias NAME]... [--default] [--registry FILE] [--dest DIR] [--description TEXT]
//
// Downloads a Hugging Face ONNX export (transformers.js / Optimum layout) into
// models/hub/<owner>/<name>/<commit>/, resuming partial files and verifying each against the hub's
// checksums, then registers the folder in the model registry under a versioned id. Honours
// HF_ENDPOINT (a mirror or a local hub) and HF_TOKEN (private or gated repos).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { fetchModel, formatBytes, HubFetchError, hubUrlFromEnv, VARIANTS, type FetchModelResult, type Variant } from '../src/hub/fetch.js';
import { progressBar } from '../src/hub/progress.js';
import { checkRegistry, DEFAULT_REGISTRY_FILE, registerModel, type RegistryFile } from '../src/registry.js';

export const DEFAULT_DEST = fileURLToPath(new URL('./hub/', import.meta.url));

const USAGE = `Usage: npm run models:fetch -- <owner/name> [options]

Downloads a Hugging Face ONNX export (config.json, tokenizer files and one onnx/ variant) and
registers it in the model registry.

Options:
  --revision R       branch, tag or commit (default main); the folder is named after the commit
  --variant V        fp32 (onnx/model.onnx), int8 (onnx/model_quantized.onnx, default),
                     fp16 (onnx/model_fp16.onnx) or q4 (onnx/model_q4.onnx)
  --id ID            versioned id to register, e.g. svc-1.14.0
                     (default: <name>-<variant>-<commit[0:7]>, lower case)
  --alias NAME       point an alias (e.g. svc-latest) at it; repeatable
  --default          make it the registry's default (the model the server loads at startup)
  --registry FILE    registry to update (default models/registry.json)
  --dest DIR         download root (default models/hub)
  --description T    description listed by GET /v1/models
  -h, --help         this text

Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (private or gated repos).
Interrupted downloads resume where they stopped: run the same command again.`;

export interface FetchCliIo {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream & { isTTY?: boolean };
}

export async function run(argv: string[], io: FetchCliIo = {}): Promise<number> {
  const env = io.env ?? process.env;
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        revision: { type: 'string' },
        variant: { type: 'string' },
        id: { type: 'string' },
        alias: { type: 'string', multiple: true },
        default: { type: 'boolean' },
        registry: { type: 'string' },
        dest: { type: 'string' },
        description: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    stderr.write(`${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values: o, positionals } = args;
  if (o.help) {
    stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals.length !== 1) {
    stderr.write(`expected exactly one repo id, got ${positionals.length}\n\n${USAGE}\n`);
    return 2;
  }
  const variant = (o.variant ?? 'int8') as Variant;
  if (!VARIANTS.includes(variant)) {
    stderr.write(`--variant must be one of ${VARIANTS.join(', ')}, not "${o.variant}"\n`);
    return 2;
  }
  const repo = positionals[0];
  const registry = path.resolve(o.registry ?? DEFAULT_REGISTRY_FILE);
  const dest = path.resolve(o.dest ?? DEFAULT_DEST);
  const hubUrl = hubUrlFromEnv(env);
  const bar = progressBar(stderr);
  const log = (line: string) => {
    bar.done();
    stderr.write(`${line}\n`);
  };

  let result: FetchModelResult;
  try {
    log(`fetching ${repo}@${o.revision ?? 'main'} (${variant}) from ${hubUrl}`);
    result = await fetchModel({
      repo,
      revision: o.revision,
      variant,
      destRoot: dest,
      hubUrl,
      accessToken: env.HF_TOKEN || undefined,
      onProgress: (p) => bar.update(p),
      log,
    });
    bar.done();
  } catch (e) {
    bar.done();
    if (e instanceof HubFetchError) {
      stderr.write(`models:fetch: ${e.message}\n`);
      return 1;
    }
    throw e;
  }

  const bytes = result.files.reduce((n, f) => n + f.size, 0);
  const fresh = result.files.filter((f) => f.how !== 'present').length;
  log(`verified ${result.files.length} files (${formatBytes(bytes)}, ${fresh} transferred) in ${result.modelDir}`);

  const name = repo.split('/')[1].toLowerCase();
  const id = o.id ?? `${name}-${variant}-${result.commit.slice(0, 7)}`;
  const rel = path.relative(path.dirname(registry), result.modelDir).split(path.sep).join('/');
  try {
    registerModel(
      registry,
      id,
      {
        path: rel,
        variant,
        description: o.description ?? `${repo} (${variant}) at commit ${result.commit.slice(0, 12)}, from ${hubUrl}`,
        release_date: result.lastModified,
      },
      o.alias ?? [],
    );
    if (o.default) setDefault(registry, id);
  } catch (e) {
    stderr.write(`models:fetch: downloaded, but could not register it: ${(e as Error).message}\n`);
    return 1;
  }
  const aliasNote = [o.alias?.length ? `aliases: ${o.alias.join(', ')}` : '', o.default ? 'default' : ''].filter(Boolean).join('; ');
  log(`registered ${id}${aliasNote ? ` (${aliasNote})` : ''} in ${registry}`);
  stdout.write(`${JSON.stringify({ id, path: rel, dir: result.modelDir, commit: result.commit, variant })}\n`);
  return 0;
}

/** Points the registry's "default" at id (registerModel leaves it alone), atomically. */
function setDefault(file: string, id: string): void {
  const data = JSON.parse(readFileSync(file, 'utf8')) as RegistryFile;
  data.default = id;
  checkRegistry(data, file);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`);
  renameSync(tmp, file);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  run(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`models:fetch: ${(e as Error).stack ?? e}\n`);
      process.exit(1);
    },
  );
}

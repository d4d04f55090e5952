// assay batch FILE [--url URL | --local] [--out FILE] [--cancel]: a JSONL batch input submitted to
// a server (or to one started in this process), its progress shown, its results written as they
// arrive, and the run resumable after the client stops (batch-output.ts keeps where it was).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AssayAPIError, AssayBatches, DEFAULT_BASE_URL, type Batch } from '../client/index.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import { fileSha256, readState, ResultsOutput, stateFileOf, type BatchState } from './batch-output.js';
import { describeError, NO_KEY, parseCommand, resolveIo, serverTarget, type CommandIo, type Io } from './common.js';
import { progressBar } from './progress.js';
import { explainFirstLine } from './batch-input.js';

const FLAGS = commandFlags({
  head: `Usage: assay batch FILE [--url URL | --local [--data-dir DIR]] [--out FILE] [options]

Submits a JSONL batch input (one {"custom_id", "body"} a line) and writes its results as they
arrive. Stopped (Ctrl-C, a crash), the batch runs on: the same command again resumes the results
where they stopped, without a line lost or written twice.
`,
  flags: {
    url: COMMON_FLAGS.url('the server', DEFAULT_BASE_URL),
    key: COMMON_FLAGS.key(),
    out: {
      arg: 'FILE',
      doc: `the results, JSONL (default FILE.results.jsonl); where the run is
is kept beside it, in OUT.batch.json, until the batch has ended`,
    },
    local: {
      doc: `run the server in this process (127.0.0.1, a free port, a key of its own)
with the registry's models, instead of asking one at --url`,
    },
    'data-dir': { arg: 'DIR', doc: 'with --local: where the batch is kept (default a new temporary folder)' },
    model: {
      arg: 'M',
      multiple: true,
      doc: "with --local: a model to load first (default the registry's default); repeatable",
    },
    registry: COMMON_FLAGS.registry('with --local: model registry'),
    cancel: { doc: 'cancel the batch a stopped run left (its OUT.batch.json), then write its results' },
    new: {
      doc: `submit the input as a new batch, even when the server has one of it (by
default the same input gets the same batch, unless the models changed)`,
    },
    'page-size': { arg: 'N', doc: 'result lines per page read (default 1000)' },
    poll: { arg: 'MS', doc: 'wait between progress reads while no new results come (default 500)' },
  },
  column: 20,
  positionals: true,
  tail: `Exit status: 0 the batch completed (lines that failed are in the results, with their error),
1 it failed, expired or was cancelled, or the server could not be used, 2 bad arguments,
130 stopped by Ctrl-C (the batch runs on).`,
});

export interface BatchRunOptions {
  /** Stops the run as Ctrl-C does (tests). */
  signal?: AbortSignal;
  /** Called after each results page is appended and its cursor recorded (tests stop a run there). */
  onPage?: (lines: number) => void;
}

export async function run(argv: string[], ioOptions?: CommandIo, options: BatchRunOptions = {}): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand('batch', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) return usage(io, 'name one JSONL input FILE');
  const file = positionals[0]!;
  if (values.local && values.url) return usage(io, '--local runs its own server: not with --url');
  const target = serverTarget(values, io.env);
  if (!values.local && !target.key) return usage(io, NO_KEY);
  if (!values.local && (values['data-dir'] || values.model)) return usage(io, '--data-dir and --model go with --local');
  const pageSize = values['page-size'] === undefined ? 1000 : Number(values['page-size']);
  const pollMs = values.poll === undefined ? 500 : Number(values.poll);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 10_000)
    return usage(io, '--page-size takes a whole number from 1 to 10000');
  if (!(pollMs >= 0)) return usage(io, '--poll takes milliseconds');
  let sha256: string;
  try {
    sha256 = await fileSha256(file);
  } catch (e) {
    return usage(io, `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  // A file that is not a batch input is refused before anything is sent, saying what it is.
  const notBatch = values.cancel ? undefined : await explainFirstLine(file);
  if (notBatch) {
    io.err(`assay batch: ${notBatch}\n`);
    return 2;
  }

  const controller = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  const onInt = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', onInt);
  let local: Awaited<ReturnType<typeof import('./batch-local.js').startLocalServer>> | undefined;
  try {
    if (values.local) {
      const { startLocalServer } = await import('./batch-local.js');
      local = await startLocalServer(
        { registryFile: parsed.registry, models: values.model ?? [], dataDir: values['data-dir'] },
        io,
      );
    }
    const url = local?.url ?? target.url ?? DEFAULT_BASE_URL;
    const api = new AssayBatches({ baseUrl: url, apiKey: local?.key ?? target.key, maxRetries: 5 });
    const out = values.out ?? `${file}.results.jsonl`;
    return await runBatch(
      {
        api,
        key: local?.key ?? target.key!,
        file,
        sha256,
        out,
        pageSize,
        pollMs,
        cancel: values.cancel,
        fresh: values.new,
        local: local?.dataDir,
      },
      io,
      signal,
      options.onPage,
    );
  } catch (e) {
    if (signal.aborted) return 130;
    io.err(`assay batch: ${describeError(e)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onInt);
    await local?.close();
  }
}

interface Job {
  api: AssayBatches;
  key: string;
  file: string;
  sha256: string;
  out: string;
  pageSize: number;
  pollMs: number;
  cancel?: boolean;
  /** --new: a new batch, whatever the server or a stopped run has of this input. */
  fresh?: boolean;
  /** With --local: the data directory the batch is kept in. */
  local?: string;
}

/** The batch a stopped run left for this input, when it is still on the server and its models are the same. */
async function resumable(job: Job, models: string, io: Io, signal: AbortSignal): Promise<BatchState | undefined> {
  const state = await readState(stateFileOf(job.out));
  if (!state || state.sha256 !== job.sha256 || (!job.local && state.url !== job.api.baseUrl)) return undefined;
  if (job.fresh && !job.cancel) return undefined;
  if (state.models !== undefined && state.models !== models && !job.cancel) {
    io.err(
      `assay batch: the server's models changed since batch ${state.batchId}: submitting ${job.file} as a new batch\n`,
    );
    return undefined;
  }
  try {
    await job.api.get(state.batchId, { signal });
    return state;
  } catch (e) {
    if (!(e instanceof AssayAPIError && e.status === 404)) throw e;
    io.err(`assay batch: batch ${state.batchId} is not on the server any more: submitting ${job.file} again\n`);
    return undefined;
  }
}

async function runBatch(job: Job, io: Io, signal: AbortSignal, onPage?: (lines: number) => void): Promise<number> {
  const { api } = job;
  const models = await modelsIdentity(api.baseUrl, job.key, signal);
  let state = await resumable(job, models, io, signal);
  if (job.cancel) {
    if (!state) {
      io.err(`assay batch: no stopped run of ${job.file} to cancel (${stateFileOf(job.out)})\n`);
      return 1;
    }
    const b = await api.cancel(state.batchId, { signal });
    io.err(`assay batch: batch ${b.id} is ${b.status}\n`);
  }
  if (state) {
    io.err(`assay batch: resuming batch ${state.batchId} into ${job.out} (${state.bytes} bytes written)\n`);
  } else {
    // The same input on the same models gets the same batch (a run that stopped before its state
    // file was written); other models, or --new, a new one.
    const fresh = job.fresh ? `-new-${randomUUID()}` : '';
    const idempotencyKey = `assay-batch-sha256-${job.sha256}-models-${models}${fresh}`;
    const b = await api.create(job.file, { idempotencyKey, signal });
    io.err(`assay batch: batch ${b.id} (${b.request_counts.total} lines so far, ${b.status})\n`);
    state = { url: api.baseUrl, batchId: b.id, cursor: null, bytes: 0, sha256: job.sha256, models };
  }
  const output = await ResultsOutput.open(job.out, { ...state, url: api.baseUrl });
  const id = state.batchId;
  const bar = progressBar({ write: (t: string) => io.err(t), isTTY: io.errIsTTY });
  const started = Date.now();
  let written = 0;
  let first: { done: number; at: number } | undefined;
  let batch: Batch | undefined;
  let shownAt = 0;
  const show = (b: Batch) => {
    if (b.request_counts.total === 0) return; // still validating: the lines are being counted
    const done = b.request_counts.completed + b.request_counts.failed;
    first ??= { done, at: Date.now() };
    const since = first;
    bar.update(done, b.request_counts.total, () => {
      // Lines per second since the first progress read of this run (the model may load before it).
      const seconds = (Date.now() - since.at) / 1000;
      const rate = seconds > 0 ? (done - since.done) / seconds : 0;
      const eta = rate > 0 ? ` ETA ${clock((b.request_counts.total - done) / rate)}` : '';
      return `${done}/${b.request_counts.total} lines ${rate.toFixed(1)} lines/s${eta} ${b.status}`;
    });
  };
  try {
    for (;;) {
      const page = await api.results(id, { after: output.cursor, limit: job.pageSize }, { signal });
      await output.append(page.lines, page.cursor);
      written += page.lines.length;
      onPage?.(page.lines.length);
      if (page.done) break;
      const waiting = page.lines.length < job.pageSize;
      if (waiting || Date.now() - shownAt > 1000) {
        show((batch = await api.get(id, { signal })));
        shownAt = Date.now();
      }
      if (waiting) await sleep(job.pollMs, undefined, { signal });
    }
  } catch (e) {
    bar.done();
    await output.close();
    if (!signal.aborted) throw e;
    io.err(
      job.local
        ? `assay batch: stopped; batch ${id} is kept in ${job.local}: run the same command with --data-dir ${job.local} to resume it\n`
        : `assay batch: stopped; batch ${id} runs on at ${api.baseUrl}: run the same command again ` +
            `to resume writing ${job.out}, or with --cancel to cancel it\n`,
    );
    return 130;
  }
  await output.finish();
  batch = await api.get(id, { signal });
  show(batch);
  bar.done();
  const seconds = (Date.now() - started) / 1000;
  const { completed, failed } = batch.request_counts;
  io.err(
    `assay batch: batch ${id} ${batch.status}: ${completed} completed, ${failed} failed${serverTime(batch)}; ` +
      `${written} result lines written to ${job.out} by this run in ${seconds.toFixed(1)} s\n`,
  );
  if (batch.status === 'completed') return 0;
  const reasons = (batch.errors?.data ?? []).map((e) => `  ${e.code}: ${e.message}`);
  io.err(
    `assay batch: the batch ended ${batch.status}, not completed${reasons.length ? `:\n${reasons.join('\n')}` : ''}\n`,
  );
  return 1;
}

/** The server's models identity (GET /v1/models' x-assay-models-identity header; '' when it sends none). */
async function modelsIdentity(url: string, key: string, signal: AbortSignal): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` }, signal });
      await res.body?.cancel();
      if (res.status < 500 || attempt >= 5) return res.headers.get('x-assay-models-identity') ?? '';
    } catch (e) {
      // A server not answering yet is retried as the batch client retries (then the error is told).
      if (signal.aborted || attempt >= 5) throw e;
    }
    await sleep(500 * 2 ** attempt, undefined, { signal });
  }
}

/** How long the batch ran on the server, from its timestamps (seconds), and its lines per second. */
function serverTime(b: Batch): string {
  const end = [b.completed_at, b.failed_at, b.cancelled_at, b.expired_at].find((t) => typeof t === 'number');
  if (typeof end !== 'number') return '';
  const seconds = Math.max(end - b.created_at, 1);
  const lines = b.request_counts.completed + b.request_counts.failed;
  return ` in ${clock(seconds)} on the server (${(lines / seconds).toFixed(1)} lines/s)`;
}

function clock(seconds: number): string {
  const s = Math.round(seconds);
  return s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
    : `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

function usage(io: Io, message: string): number {
  io.err(`assay batch: ${message}\n\nRun assay batch --help for usage.\n`);
  return 2;
}

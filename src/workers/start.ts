// Starting the project's worker threads (the engine thread, the planner pool, the body worker, the
// graph rewrite): which file a worker runs, with which data, with which Node options, and the one
// wiring of a worker's death to its channel. Below every layer: it imports nothing of the project.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { WorkerChannel, type CallMap, type ChannelOptions } from './channel.js';

/** The workerData key that names a TypeScript worker's source for the shared tsx entry. */
export const TS_ENTRY = '__assayTsEntry';

/**
 * A worker's entry: its compiled `<name>.js` beside `base` when it exists (the build, the package),
 * else the one shared entry that registers tsx in the new thread (workers do not inherit the main
 * thread's registration: tests, `npx tsx`) and loads `<name>.ts`, named in the worker's data.
 */
export function workerEntry(
  name: string,
  base: string | URL,
  workerData: Record<string, unknown> = {},
): { filename: string; workerData: Record<string, unknown> } {
  const js = fileURLToPath(new URL(`./${name}.js`, base));
  if (existsSync(js)) return { filename: js, workerData };
  return {
    filename: fileURLToPath(new URL('./tsx-entry.mjs', import.meta.url)),
    workerData: { ...workerData, [TS_ENTRY]: new URL(`./${name}.ts`, base).href },
  };
}

/**
 * Node options for the worker threads: the process's own, less those only valid for an evaluated
 * script (`node --input-type=module -e ...` would make every worker fail to start).
 */
export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--input-type')) continue;
    if (['-e', '--eval', '-p', '--print'].includes(a)) {
      i++; // and its script
      continue;
    }
    if (/^(--eval|--print)=/.test(a)) continue;
    out.push(a);
  }
  return out;
}

/** How a worker died: an error nothing in it caught, or its exit (after an error, too). */
export type WorkerDeath = { error: Error } | { code: number };

export interface StartWorkerOptions<Event> extends ChannelOptions<Event> {
  /** Who the worker is, in the error its calls fail with when it exits: `<name> exited (<code>)`. */
  name: string;
  /** The error pending and later calls fail with (default: the worker's own error, or `<name> exited (<code>)`). */
  deathError?(death: WorkerDeath): Error;
  /** Once, when the worker dies, after its pending calls failed with `error`. */
  onDeath?(error: Error): void;
}

/**
 * Starts a worker and the parent's end of its channel, wired so that its death (an uncaught error
 * or an exit) fails every pending and later call once, then tells `onDeath`. Every worker of the
 * project starts here. `options` are the Worker's (execArgv defaults to workerExecArgv()).
 */
export function startWorker<Calls extends CallMap, Event = never>(
  filename: string,
  options: WorkerOptions,
  o: StartWorkerOptions<Event>,
): { worker: Worker; channel: WorkerChannel<Calls, Event> } {
  const worker = new Worker(filename, { execArgv: workerExecArgv(), ...options });
  const channel = new WorkerChannel<Calls, Event>(worker, o);
  let dead = false;
  const died = (death: WorkerDeath): void => {
    if (dead) return;
    dead = true;
    const error =
      o.deathError?.(death) ?? ('error' in death ? death.error : new Error(`${o.name} exited (${death.code})`));
    channel.fail(error);
    o.onDeath?.(error);
  };
  worker.on('error', (error) => died({ error }));
  worker.on('exit', (code) => died({ code }));
  return { worker, channel };
}

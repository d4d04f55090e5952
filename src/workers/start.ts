// Starting the project's worker threads (the engine thread, the planner pool, the body worker, the
// graph rewrite): which file a worker runs, with which data, and with which Node options. Below
// every layer: it imports nothing of the project.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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

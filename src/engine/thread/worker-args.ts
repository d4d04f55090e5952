// Starting the engine's worker threads: which file a worker runs, and with which Node options.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * A worker's entry: its compiled JavaScript when it exists (`<name>.js` beside the module), else
 * the `<name>-tsx.mjs` bootstrap that registers tsx (workers do not inherit the main thread's
 * registration) and loads the TypeScript source.
 */
export function workerFile(name: string, base: string | URL): string {
  const js = fileURLToPath(new URL(`./${name}.js`, base));
  return existsSync(js) ? js : fileURLToPath(new URL(`./${name}-tsx.mjs`, base));
}

/**
 * Node options for the engine's worker threads: the process's own, less those only valid for an
 * evaluated script (`node --input-type=module -e ...` would make every worker fail to start).
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

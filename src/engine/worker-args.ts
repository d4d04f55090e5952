// Node options for the engine's worker threads: the process's own, less those only valid for an
// evaluated script (`node --input-type=module -e ...` would make every worker fail to start).
export function workerExecArgv(argv: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
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

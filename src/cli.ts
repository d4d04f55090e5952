// assay <serve|eval|batch|calibrate|models|mcp|ps|load|unload|reload> [--help] [--version]: the command dispatcher.
import { pathToFileURL } from 'node:url';
import { packageVersion } from './common/index.js';

const HELP = `Usage: assay <command> [options]

Commands:
  serve      run the HTTP API (assay serve --help)
  eval       answer questions about a state, locally or against a server (assay eval --help)
  batch      submit a JSONL batch, show its progress and write its results, resumably (assay batch --help)
  calibrate  fit a temperature per question type on a labeled dataset (assay calibrate --help)
  models     list, fetch and register models (assay models --help)
  mcp        an MCP server for agents on stdio: the engine in-process or a server (assay mcp --help)
  ps         the models resident in a running server (assay ps --url URL; operator key)
  load       load a model on a running server (assay load MODEL --url URL; operator key)
  unload     unload an idle model from a running server (assay unload MODEL --url URL)
  reload     make a running server read its registry again (assay reload --url URL)

Run 'assay <command> --help' for a command's options; 'assay --version' prints the version.`;

type Command = (argv: string[]) => Promise<number>;

// Loaded on demand, so one command's missing or broken module cannot break another.
const COMMANDS: Record<string, () => Promise<{ run: Command }>> = {
  serve: () => import('./commands/serve.js'),
  eval: () => import('./commands/eval.js'),
  batch: () => import('./commands/batch.js'),
  calibrate: () => import('./commands/calibrate.js'),
  models: () => import('./commands/models.js'),
  mcp: () => import('./commands/mcp.js'),
  ps: () => import('./commands/operator.js').then((m) => ({ run: m.ps })),
  load: () => import('./commands/operator.js').then((m) => ({ run: m.load })),
  unload: () => import('./commands/operator.js').then((m) => ({ run: m.unload })),
  reload: () => import('./commands/operator.js').then((m) => ({ run: m.reload })),
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(`${HELP}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    process.stdout.write(`assay ${packageVersion()}\n`);
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`assay: unknown command '${name}'\n\n${HELP}\n`);
    return 2;
  }
  return (await load()).run(rest);
}

/** Runs main and exits with its status, once pending output is flushed. */
export async function runCli(argv: string[]): Promise<void> {
  let code: number;
  try {
    code = await main(argv);
  } catch (e) {
    process.stderr.write(`assay: ${(e as Error)?.stack ?? String(e)}\n`);
    code = 1;
  }
  process.exitCode = code;
  // Native thread pools can outlive their sessions by a moment; do not hang on them.
  setTimeout(() => process.exit(code), 1000).unref();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void runCli(process.argv.slice(2));
}

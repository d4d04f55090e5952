// What the commands share: streams, flag parsing (with the registry location), error reporting.
import { parseArgs } from 'node:util';
import { AssayError } from '../client/index.js';
import {
  commandHelp,
  ConfigError,
  parseArgsOptions,
  resolveSettings,
  type CommandFlags,
  type FlagValues,
  type Flags,
} from '../config/index.js';

export interface CommandIo {
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream;
  env?: Record<string, string | undefined>;
}

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Whether err() writes to a terminal (progress bars redraw in place there). */
  errIsTTY?: boolean;
  stdin: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
}

export function resolveIo(io: CommandIo = {}): Io {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  return {
    out: (t) => void stdout.write(t),
    err: (t) => void stderr.write(t),
    errIsTTY: Boolean((stderr as { isTTY?: boolean }).isTTY),
    stdin: io.stdin ?? process.stdin,
    env: io.env ?? process.env,
  };
}

export type Format = 'json' | 'table';

/** --format's value, `def` when it is not given (the default its help names: COMMON_FLAGS.format(def)). */
export function parseFormat(v: string | undefined, def: Format): Format | undefined {
  if (v === undefined) return def;
  if (v === 'json' || v === 'table') return v;
  return undefined;
}

/**
 * The server and key of a client command, read one way by every command: --url, else
 * ASSAY_BASE_URL; --key, else ASSAY_API_KEY. `url` is undefined when neither names a server (a
 * command with a local engine then runs it; the others use the client's default server).
 */
export function serverTarget(
  values: { url?: string; key?: string },
  env: Record<string, string | undefined>,
): { url?: string; key?: string } {
  const url = values.url ?? (env.ASSAY_BASE_URL || undefined);
  const key = values.key ?? (env.ASSAY_API_KEY || undefined);
  return { ...(url ? { url } : {}), ...(key ? { key } : {}) };
}

/** The message for a client command run without a key: names the CLI's flag and variable. */
export const NO_KEY = 'no API key: pass --key KEY or set ASSAY_API_KEY';

/** One line for a failed remote call: the server's message, status and request id. */
export function describeError(e: unknown): string {
  if (e instanceof AssayError) {
    const parts = [e.message];
    if (e.requestId) parts.push(`request id ${e.requestId}`);
    if (e.attempts > 1) parts.push(`after ${e.attempts} attempts`);
    return parts.join('; ');
  }
  return (e as Error)?.message ?? String(e);
}

/** Left-aligned columns; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = (rows[0] ?? []).map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export interface ParsedCommand<F extends Flags> {
  values: FlagValues<F>;
  positionals: string[];
  /** The registry file: --registry, else ASSAY_REGISTRY, else the package's (the `registry` setting). */
  registry: string;
}

/**
 * The one flag parser of the commands (assay serve parses through its settings schema,
 * src/config): parseArgs over the command's declared flags (src/config/flags.ts), --help printing
 * the help generated from the same declaration, and the settings the command shares with serve
 * resolved as serve resolves them. Returns the parsed command, or the exit status when the command
 * is already done: 0 after printing the help, 2 after a usage error.
 */
export function parseCommand<F extends Flags>(
  name: string,
  spec: CommandFlags<F>,
  argv: string[],
  io: Io,
): ParsedCommand<F> | number {
  const help = commandHelp(spec);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: argv,
      options: parseArgsOptions(spec.flags),
      allowPositionals: spec.positionals ?? false,
      strict: true,
    });
  } catch (e) {
    io.err(`assay ${name}: ${(e as Error).message}\n\n${help}\n`);
    return 2;
  }
  if (parsed.values.help) {
    io.out(`${help}\n`);
    return 0;
  }
  try {
    const { registry } = resolveSettings(['registry'], parsed.values, io.env);
    return { values: parsed.values as FlagValues<F>, positionals: parsed.positionals, registry };
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    io.err(`assay ${name}: ${e.message}\n`);
    return 2;
  }
}

// What `assay eval` and `assay models` share: streams, the registry location, error reporting.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AssayError } from '../client/index.js';
import { DEFAULT_REGISTRY_FILE } from '../registry.js';

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

/** The registry the local engine reads: --registry, else ASSAY_REGISTRY, else models/registry.json. */
export function registryFile(flag: string | undefined, env: Record<string, string | undefined>): string {
  return flag ?? env.ASSAY_REGISTRY ?? DEFAULT_REGISTRY_FILE;
}

export type Format = 'json' | 'table';

export function parseFormat(v: string | undefined): Format | undefined {
  if (v === undefined || v === 'json') return 'json';
  if (v === 'table') return 'table';
  return undefined;
}

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

/**
 * The one flag parser of the commands (assay serve parses through its settings schema,
 * src/config): node:util parseArgs plus --help. Returns the parsed flags, or the exit status when
 * the command is already done: 0 after printing the help, 2 after a usage error.
 */
export function parseFlags<const T extends ParseArgsConfig>(
  name: string,
  config: T,
  help: string,
  io: Io,
): ReturnType<typeof parseArgs<T>> | number {
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(config);
  } catch (e) {
    io.err(`assay ${name}: ${(e as Error).message}\n\n${help}\n`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    io.out(`${help}\n`);
    return 0;
  }
  return parsed;
}

/** String flags plus --format json|table (assay eval, assay models). */
export function parseCommand(
  name: string,
  argv: string[],
  flags: readonly string[],
  help: string,
  io: Io,
): { values: Record<string, string | undefined>; format: Format } | number {
  const options: ParseArgsConfig['options'] = { help: { type: 'boolean', short: 'h' } };
  for (const f of flags) options[f] = { type: 'string' };
  const parsed = parseFlags(name, { args: argv, options }, help, io);
  if (typeof parsed === 'number') return parsed;
  const strings = parsed.values as Record<string, string | undefined>;
  const format = parseFormat(strings.format);
  if (!format) {
    io.err(`assay ${name}: --format must be json or table, not "${strings.format}"\n`);
    return 2;
  }
  return { values: strings, format };
}

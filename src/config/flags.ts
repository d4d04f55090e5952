// The flags of the commands other than `assay serve` (whose flags are its settings): each command
// declares its options once, as a CommandFlags; its parseArgs options and its --help text are both
// generated from that declaration, so the help cannot list a flag the parser refuses or miss one it
// takes. The flags several commands share are written once, in COMMON_FLAGS; --registry is the
// settings schema's own `registry` setting (same flag, variable and default, resolved by
// resolveSettings like every setting).
import type { ParseArgsConfig } from 'node:util';
import { settingsInfo } from './settings.js';

export interface Flag {
  /** What the flag takes, as the help shows it (FILE, N, ...); absent for a switch. */
  arg?: string;
  /** Repeatable: the values in the order given. */
  multiple?: boolean;
  /** Its text in the help; each '\n' starts a line aligned under the first. */
  doc: string;
}

export type Flags = Record<string, Flag>;

/** What parseArgs gives for each declared flag. */
export type FlagValues<F extends Flags> = {
  [K in keyof F]?: F[K] extends { multiple: true } ? string[] : F[K] extends { arg: string } ? string : boolean;
};

export interface CommandFlags<F extends Flags = Flags> {
  /** The help before the options: ends with an empty line, or with a heading such as "Options:". */
  head: string;
  /** The options, in the order the help lists them (-h, --help is added last). */
  flags: F;
  /** The column each option's text starts at. */
  column: number;
  /** The help after the options (after an empty line). */
  tail?: string;
  /** Whether the command takes positional arguments. */
  positionals?: boolean;
}

const registry = settingsInfo().find((s) => s.name === 'registry')!;

/** The flags several commands share: one name, one argument, one default, worded once. */
export const COMMON_FLAGS = {
  /** The model registry: `role` says what the command does with it; the default is the setting's. */
  registry: (role: string) => ({
    arg: registry.arg!,
    doc: `${role} (default ${registry.env} or ${registry.shown})`,
  }),
  /**
   * The server a client command talks to, read the same way by every command: --url, else
   * ASSAY_BASE_URL, else `fallback` (the client's default server, or "the local engine").
   */
  url: (doc: string, fallback: string) => ({ arg: 'URL', doc: `${doc}\n(default ASSAY_BASE_URL, else ${fallback})` }),
  /** The API key a client command sends: --key, else ASSAY_API_KEY. */
  key: (role = 'the API key') => ({ arg: 'KEY', doc: `${role} (default ASSAY_API_KEY)` }),
  /** A model name or alias (or, for `models synth`, a registry entry). */
  model: (doc: string, arg = 'M') => ({ arg, doc }),
  /** --format, its help naming the default the command applies (parseFormat(values.format, def)). */
  format: (def: 'json' | 'table') =>
    ({
      arg: 'F',
      doc: def === 'json' ? "json (default: the API's response body) or table" : 'table (default) or json',
    }) satisfies Flag,
};

/** A command's flags, declared with their literal types (so FlagValues knows each flag's value). */
export function commandFlags<const F extends Flags>(spec: CommandFlags<F>): CommandFlags<F> {
  return spec;
}

/** The flags as parseArgs options, --help (-h) included. */
export function parseArgsOptions(flags: Flags): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const [name, f] of Object.entries(flags)) {
    options[name] =
      f.arg === undefined ? { type: 'boolean' } : { type: 'string', ...(f.multiple ? { multiple: true } : {}) };
  }
  options.help = { type: 'boolean', short: 'h' };
  return options;
}

/** The command's --help text. */
export function commandHelp(spec: CommandFlags): string {
  const row = (flag: string, doc: string) => {
    const indent = ' '.repeat(spec.column);
    const [first, ...rest] = doc.split('\n');
    return [`  ${flag}`.padEnd(spec.column) + first, ...rest.map((l) => indent + l)].join('\n');
  };
  const rows = Object.entries(spec.flags).map(([name, f]) => row(`--${name}${f.arg ? ` ${f.arg}` : ''}`, f.doc));
  return [spec.head, ...rows, row('-h, --help', 'this text')].join('\n') + (spec.tail ? `\n\n${spec.tail}` : '');
}

// Parses `assay serve`'s flags and environment with the settings schema, once, into a frozen
// object; resolveSettings does the same for the settings another command shares with it. Flags win over
// the environment, which wins over the defaults. An invalid value stops the
// server at startup with a message naming the flag or variable it came from.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ServeSettingsSchema, settingsInfo, type ServeSettings, type SettingName } from './settings.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** The settings, or 'help' when --help was asked. Throws ConfigError for unknown flags and invalid values. */
export function loadServeSettings(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): Readonly<ServeSettings> | 'help' {
  const info = settingsInfo();
  const options: NonNullable<ParseArgsConfig['options']> = { help: { type: 'boolean', short: 'h' } };
  for (const s of info) {
    if (!s.flag) continue;
    options[s.flag] = { type: s.boolean ? 'boolean' : 'string' };
    if (s.boolean) options[`no-${s.flag}`] = { type: 'boolean' };
  }
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  if (values.help) return 'help';
  return resolveSettings(
    info.map((s) => s.name),
    values,
    env,
  );
}

/**
 * The named settings, from the flags parseArgs gave (by flag name) and the environment, validated
 * by the schema and frozen: a flag wins over its variable (an empty variable counts as unset),
 * which wins over the default. Every command resolves its settings here (`assay serve` all of
 * them; the others the ones they share with it, such as the registry). Throws ConfigError naming
 * the flag or variable a bad value came from.
 */
export function resolveSettings<const N extends SettingName>(
  names: readonly N[],
  values: Readonly<Record<string, unknown>>,
  env: Record<string, string | undefined>,
): Readonly<Pick<ServeSettings, N>> {
  const raw: Partial<Record<SettingName, string | boolean>> = {};
  const source: Partial<Record<SettingName, string>> = {};
  for (const s of settingsInfo()) {
    if (!(names as readonly SettingName[]).includes(s.name)) continue;
    const flagValue = !s.flag ? undefined : values[`no-${s.flag}`] ? false : values[s.flag];
    if (flagValue !== undefined) {
      raw[s.name] = flagValue as string | boolean;
      source[s.name] = flagValue === false ? `--no-${s.flag}` : `--${s.flag}`;
    } else if (s.env && env[s.env] !== undefined && env[s.env] !== '') {
      raw[s.name] = env[s.env]!;
      source[s.name] = s.env;
    }
  }
  const mask = Object.fromEntries(names.map((n) => [n, true])) as Record<SettingName, true>;
  const parsed = ServeSettingsSchema.pick(mask).safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) => `${source[i.path[0] as SettingName] ?? String(i.path[0])} ${i.message}`,
    );
    throw new ConfigError(lines.join('; '));
  }
  return Object.freeze(parsed.data as unknown as Pick<ServeSettings, N>);
}

// Parses `assay serve`'s flags and environment with the settings schema, once, into a frozen
// object. Flags win over the environment, which wins over the defaults. An invalid value stops the
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

  const raw: Partial<Record<SettingName, string | boolean>> = {};
  const source: Partial<Record<SettingName, string>> = {};
  for (const s of info) {
    const flagValue = !s.flag ? undefined : values[`no-${s.flag}`] ? false : values[s.flag];
    if (flagValue !== undefined) {
      raw[s.name] = flagValue as string | boolean;
      source[s.name] = flagValue === false ? `--no-${s.flag}` : `--${s.flag}`;
    } else if (s.env && env[s.env] !== undefined && env[s.env] !== '') {
      raw[s.name] = env[s.env]!;
      source[s.name] = s.env;
    }
  }
  const parsed = ServeSettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) => `${source[i.path[0] as SettingName] ?? String(i.path[0])} ${i.message}`,
    );
    throw new ConfigError(lines.join('; '));
  }
  return Object.freeze(parsed.data);
}

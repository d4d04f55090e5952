// The package's version, read once from package.json (two folders above src/common and dist/common alike).
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function packageVersion(): string {
  return (version ??= (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version);
}

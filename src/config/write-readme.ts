// npm run docs:config: writes the configuration table generated from the settings schema into
// README.md, between its config-table markers.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configTable } from './docs.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const START = /<!-- config-table:[^\n]*-->\n/;
const END = '<!-- config-table end -->';

/** README text with the generated table between the markers. */
export function withConfigTable(readme: string): string {
  const start = START.exec(readme);
  const end = readme.indexOf(END);
  if (!start || end < 0) throw new Error('README.md has no config-table markers');
  return `${readme.slice(0, start.index + start[0].length)}${configTable()}\n${readme.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(README, withConfigTable(readFileSync(README, 'utf8')));
}

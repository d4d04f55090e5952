// npm run docs:bench: writes bench/README.md, generated from the section registry and the flags.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchReadme } from './docs.js';

export const README = fileURLToPath(new URL('./README.md', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) writeFileSync(README, benchReadme());

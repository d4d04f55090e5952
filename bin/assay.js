#!/usr/bin/env node
// The `assay` command: registers tsx so the TypeScript sources run as they are, then dispatches.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli.ts');
await runCli(process.argv.slice(2));

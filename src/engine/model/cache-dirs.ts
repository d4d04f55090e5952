// Where load-time rewrites of exports are kept (graph-file.ts, row-reuse/graph-cache.ts): a module of
// its own, with no graph code, so a command that only reads what a load decided (`assay models`)
// finds the folders without loading the rewrites.
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** Where rewritten graphs go by default: the user's cache, else the OS temporary folder. */
export function defaultGraphCacheDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const cache = env.XDG_CACHE_HOME ? resolve(env.XDG_CACHE_HOME) : join(homedir(), '.cache');
  return [join(cache, 'assay', 'graphs'), join(tmpdir(), 'assay-graphs')];
}

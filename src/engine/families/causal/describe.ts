// What `assay models` shows of a causal-row folder beside its family: what a load decided for its
// graph (the default variant's), read from the graph cache alone: the state read once, or whole
// rows and why; nothing before a load has decided. No graph code is loaded to tell it.
import { rowReuseVerdict } from '../../model/row-reuse/verdict.js';
import { encoderGraph } from '../files.js';

export function describeReuse(dir: string): string | undefined {
  let path: string;
  try {
    const graph = encoderGraph(dir, undefined, false);
    if (!('single' in graph)) return undefined;
    path = graph.single;
  } catch {
    return undefined;
  }
  const verdict = rowReuseVerdict(path);
  if (!verdict) return 'reuse decided at its first load';
  return 'reuses' in verdict ? 'the state read once' : `whole rows: ${verdict.reason}`;
}

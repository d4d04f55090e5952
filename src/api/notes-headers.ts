// What a model family says beside the answers, as response headers (docs/api.md, "Model family
// headers"); the answers themselves stay exactly the contract's.
//   Assay-Truncated: state=3, options=1     questions whose input the family's layout cut by its
//                                            authors' design, per part cut (always, when any was)
//   Assay-Act-Logits: {"q1":[0.12,-1.5]}    Laya's act / abstain head per question id, only when
//                                            the request sends `Assay-Act-Logits: 1` (ids can make
//                                            it long, and proxies cap response headers: 4-8 KB in nginx)
import type { EvaluateNotes } from '../engine/index.js';

export const TRUNCATED_HEADER = 'assay-truncated';
export const ACT_LOGITS_HEADER = 'assay-act-logits';

/** "state=3, options=1": per part cut, the questions it was cut in (counts only: never ids or content, so logs keep it). */
export function truncationSummary(truncated: EvaluateNotes['truncated']): string | undefined {
  if (!truncated) return undefined;
  const counts = new Map<string, number>();
  for (const parts of Object.values(truncated)) for (const p of parts) counts.set(p, (counts.get(p) ?? 0) + 1);
  return counts.size ? [...counts].map(([part, n]) => `${part}=${n}`).join(', ') : undefined;
}

/** JSON with every non-ASCII character escaped: a header value is Latin-1 on the wire. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The headers of an evaluation's notes; `askAct` is the request's Assay-Act-Logits header. */
export function notesHeaders(
  notes: EvaluateNotes | undefined,
  askAct: string | string[] | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  const truncated = truncationSummary(notes?.truncated);
  if (truncated) out[TRUNCATED_HEADER] = truncated;
  const wanted = typeof askAct === 'string' && /^(1|true|yes)$/i.test(askAct.trim());
  if (wanted && notes?.actLogits) out[ACT_LOGITS_HEADER] = asciiJson(notes.actLogits);
  return out;
}

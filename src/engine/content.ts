// Rendering caller content (state, instructions, criteria) to text the model reads.
import type { Content } from './types.js';

/**
 * A string as is; an object or array as indented JSON, keys in the caller's order, non-ASCII kept.
 * Deterministic: the same value always renders to the same text (so its tokens, and cache keys, match).
 */
export function renderContent(value: Content | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2);
}

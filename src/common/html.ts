// Escaping text for HTML and SVG: the five characters that can end a text node or an attribute
// value (quoted with either quote) written as entities, as OWASP's rule for HTML contexts says.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `s` safe inside an element's text or a quoted attribute value of HTML or SVG. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

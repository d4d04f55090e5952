// A hypothesis template, as the zero-shot pipeline applies it: Python's
// `template.format(label)`. Assay also passes the question's instructions by name, so a template
// may carry `{instructions}` (`template.format(label, instructions=…)` in Python: a template without
// it formats exactly as the pipeline's). Parsed once at load; what Python's format would refuse,
// or what this subset does not write (conversions, format specs, other fields), is a load error.
import { ModelLoadError } from '../../errors.js';

type Part = string | { field: 'label' | 'instructions' };

export interface HypothesisTemplate {
  /** The template as the folder wrote it. */
  readonly source: string;
  /** The hypothesis for one label (text substituted as is: braces in it are not read again). */
  format(label: string, instructions: string): string;
}

/** Parses a template: `{}` / `{0}` the label, `{instructions}`, `{{` and `}}` literal braces. */
export function hypothesisTemplate(source: string, where = 'hypothesis_template'): HypothesisTemplate {
  const parts: Part[] = [];
  let text = '';
  let auto = 0;
  let manual = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '}') {
      if (source[i + 1] !== '}')
        throw new ModelLoadError(`${where}: single '}' encountered in ${JSON.stringify(source)}`);
      text += '}';
      i++;
    } else if (c === '{') {
      if (source[i + 1] === '{') {
        text += '{';
        i++;
        continue;
      }
      const end = source.indexOf('}', i);
      if (end < 0) throw new ModelLoadError(`${where}: single '{' encountered in ${JSON.stringify(source)}`);
      const name = source.slice(i + 1, end);
      if (name === '') auto++;
      else if (name === '0') manual++;
      else if (name !== 'instructions')
        throw new ModelLoadError(
          `${where}: {${name}} in ${JSON.stringify(source)}: expected {} for the option and {instructions}, nothing else`,
        );
      if (auto > 1)
        throw new ModelLoadError(`${where}: more than one {} in ${JSON.stringify(source)} (one label is passed)`);
      if (auto > 0 && manual > 0) throw new ModelLoadError(`${where}: {} and {0} mixed in ${JSON.stringify(source)}`);
      if (text !== '') parts.push(text);
      text = '';
      parts.push({ field: name === 'instructions' ? 'instructions' : 'label' });
      i = end;
    } else text += c;
  }
  if (text !== '') parts.push(text);
  // The pipeline refuses a template the label does not change (template.format(label) == template).
  if (!parts.some((p) => typeof p !== 'string' && p.field === 'label'))
    throw new ModelLoadError(`${where}: ${JSON.stringify(source)} has no {} for the option`);
  return {
    source,
    format: (label, instructions) =>
      parts.map((p) => (typeof p === 'string' ? p : p.field === 'label' ? label : instructions)).join(''),
  };
}

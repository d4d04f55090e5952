// Answers drawn as they should be read: P(yes) as a bar; a choice's and a score's distributions as
// bar charts with the picked option and the expected score marked; confidence, usage and time.
// Every drawn number also sits in a data- attribute with its full precision (the browser test
// compares them with the API's JSON).
import type { Answer, Content, Evaluation, PlaygroundModel } from './api.js';
import { h } from './dom.js';

const pct = (p: number) => `${(p * 100).toFixed(1)}%`;

function bar(p: number, label: string, picked = false): HTMLElement {
  const fill = h('span', { class: 'fill' });
  fill.style.width = pct(p); // CSSOM, allowed by the page's style-src 'self'
  return h(
    'div',
    { class: `bar-row${picked ? ' picked' : ''}`, 'data-label': label, 'data-p': String(p) },
    h('span', { class: 'bar-label' }, label, picked ? h('span', { class: 'tag' }, ' ✓ picked') : null),
    h(
      'span',
      {
        class: 'bar',
        role: 'meter',
        'aria-valuemin': '0',
        'aria-valuemax': '1',
        'aria-valuenow': String(p),
        'aria-label': `${label}: ${pct(p)}`,
      },
      fill,
    ),
    h('span', { class: 'bar-value' }, pct(p)),
  );
}

const text = (c: Content): string => (typeof c === 'string' ? c : JSON.stringify(c));

/** The formula of a choice's or score's confidence, as the model's server computes it (its --confidence). */
export type ConfidenceFormula = PlaygroundModel['confidence'];

const FORMULAS: Record<ConfidenceFormula, string> = {
  entropy: 'entropy: 1 − H/ln N over every outcome',
  hosted:
    "the hosted service's formula: (p_max − 1/k)/(1 − 1/k) for a choice, 1 − distance from the most probable level for a score",
};

function confidence(c: number, formula: ConfidenceFormula | undefined): HTMLElement {
  const p = h(
    'p',
    { class: 'confidence', 'data-confidence': String(c) },
    `confidence ${pct(c)}`,
    formula ? h('span', { class: 'formula', title: FORMULAS[formula] }, ` (${formula})`) : null,
  );
  if (formula) p.dataset.formula = formula;
  return p;
}

function answerView(id: string, a: Answer, formula: ConfidenceFormula | undefined): HTMLElement {
  const root = h(
    'article',
    { class: 'answer', 'data-question': id, 'data-type': a.type },
    h('h3', {}, id, h('span', { class: 'kind' }, ` ${a.type}`)),
  );
  switch (a.type) {
    case 'noul':
      root.dataset.noul = String(a.noul);
      root.append(h('p', { class: 'headline' }, `P(yes) = ${a.noul.toFixed(3)}`), bar(a.noul, 'yes'));
      break;
    case 'choice':
      root.dataset.choice = a.choice;
      root.append(
        h('p', { class: 'headline' }, `picked: ${a.choice}`),
        ...Object.entries(a.probabilities).map(([option, p]) => bar(p, option, option === a.choice)),
        confidence(a.confidence, formula),
      );
      break;
    case 'score': {
      root.dataset.score = String(a.score);
      const levels = Object.keys(a.probabilities);
      const top = levels.length - 1;
      const marker = h('span', { class: 'marker', 'aria-hidden': 'true' });
      marker.style.left = `${top > 0 ? (a.score / top) * 100 : 0}%`;
      const scale = h(
        'div',
        { class: 'scale', role: 'img', 'aria-label': `expected score ${a.score.toFixed(2)} on 0 to ${top}` },
        marker,
        ...levels.map((l) => h('span', { class: 'tick' }, l)),
      );
      const best = levels.reduce((b, l) => (a.probabilities[l]! > a.probabilities[b]! ? l : b), levels[0]!);
      root.append(
        h('p', { class: 'headline' }, `expected score ${a.score.toFixed(2)} (0–${top})`),
        scale,
        ...levels.map((l) => bar(a.probabilities[l]!, `${l}: ${text(a.legend[l] ?? '')}`, l === best)),
        confidence(a.confidence, formula),
      );
      break;
    }
  }
  return root;
}

/** Replaces `target`'s content with the answers and the request's facts; `formula`: the model's confidence formula, when known. */
export function showAnswers(target: HTMLElement, e: Evaluation, formula?: ConfidenceFormula): void {
  const { response } = e;
  target.replaceChildren(
    ...Object.entries(response.answers).map(([id, a]) => answerView(id, a, formula)),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'model'),
      h('dd', { 'data-model': response.model }, response.model),
      h('dt', {}, 'input tokens'),
      h('dd', { 'data-input-tokens': String(response.usage.input_tokens) }, String(response.usage.input_tokens)),
      h('dt', {}, 'output tokens'),
      h('dd', {}, String(response.usage.output_tokens)),
      h('dt', {}, 'time'),
      h('dd', {}, `${e.ms.toFixed(0)} ms`),
      e.requestId ? h('dt', {}, 'request id') : null,
      e.requestId ? h('dd', {}, e.requestId) : null,
    ),
  );
}

// The request form: the state box and the question cards (noul, choice with options and their
// descriptions, score with ordered levels), read back into a request.
import type { Content, Question } from './api.js';
import { h, uid } from './dom.js';

export type QuestionType = Question['type'];

/**
 * The state as sent: JSON when the text starts like an object or array (an error when it does not
 * parse: a typo is never sent silently as text), else the text itself; `asText` sends it as text.
 */
export function readState(text: string, asText = false): { state: Content; json: boolean } | { error: string } {
  const t = text.trim();
  if (!asText && (t.startsWith('{') || t.startsWith('['))) {
    try {
      return { state: JSON.parse(t) as Content, json: true };
    } catch (e) {
      return {
        error: `The state starts like JSON but does not parse (${(e as Error).message}). Fix it, or tick "send as plain text".`,
      };
    }
  }
  return { state: text, json: false };
}

interface Card {
  root: HTMLElement;
  read(): [string, Question];
}

const cards: Card[] = [];

function field(label: string, input: HTMLInputElement | HTMLTextAreaElement): HTMLElement {
  input.id ||= uid('f');
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input);
}

/** One editable row of a list (choice options, score levels), with a remove button. */
function row(list: HTMLElement, cells: HTMLInputElement[], what: string): HTMLElement {
  const remove = h('button', { type: 'button', class: 'icon', 'aria-label': `Remove this ${what}` }, '×');
  const r = h('div', { class: 'row' }, ...cells, remove);
  remove.addEventListener('click', () => r.remove());
  list.append(r);
  return r;
}

function optionRow(list: HTMLElement, name = '', description = ''): void {
  row(
    list,
    [
      h('input', {
        type: 'text',
        class: 'option-name',
        'aria-label': 'Option name',
        placeholder: 'option',
        value: name,
      }),
      h('input', {
        type: 'text',
        class: 'option-description',
        'aria-label': 'Option description (optional)',
        placeholder: 'when it applies (optional)',
        value: description,
      }),
    ],
    'option',
  );
}

function levelRow(list: HTMLElement, text = ''): void {
  row(
    list,
    [
      h('input', {
        type: 'text',
        class: 'level',
        'aria-label': 'Level description',
        placeholder: 'level description',
        value: text,
      }),
    ],
    'level',
  );
}

/** A field's text: the wire allows any JSON content where the editor has a text box. */
function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

const TITLES: Record<QuestionType, string> = { noul: 'Yes / no (noul)', choice: 'Choice', score: 'Score' };

/** Adds a question card of `type` to `container`, filled with `initial` when given. */
export function addQuestion(
  container: HTMLElement,
  type: QuestionType,
  initial?: { id: string; question: Question },
): HTMLElement {
  const id = h('input', { type: 'text', class: 'question-id', value: initial?.id ?? `${type}${cards.length + 1}` });
  const instructions = h('textarea', { class: 'instructions', rows: '2' });
  instructions.value = asText(initial?.question.instructions);
  const remove = h('button', { type: 'button', class: 'icon', 'aria-label': 'Remove this question' }, '×');
  const body = h('div', { class: 'question-body' }, field('Question id', id), field('Instructions', instructions));
  const root = h(
    'article',
    { class: 'question', 'data-type': type },
    h('header', {}, h('h3', {}, TITLES[type]), remove),
    body,
    h('p', { class: 'field-error', role: 'alert', hidden: true }),
  );

  let read: () => Question;
  if (type === 'noul') {
    const yes = h('input', { type: 'text', class: 'criteria-true', placeholder: 'optional' });
    const no = h('input', { type: 'text', class: 'criteria-false', placeholder: 'optional' });
    if (initial?.question.type === 'noul') {
      yes.value = asText(initial.question.criteria?.true);
      no.value = asText(initial.question.criteria?.false);
    }
    body.append(field('What counts as yes', yes), field('What counts as no', no));
    read = () => {
      const criteria = { ...(yes.value ? { true: yes.value } : {}), ...(no.value ? { false: no.value } : {}) };
      return { type: 'noul', instructions: instructions.value, ...(Object.keys(criteria).length ? { criteria } : {}) };
    };
  } else if (type === 'choice') {
    const list = h('div', { class: 'list', role: 'group', 'aria-label': 'Options' });
    const entries =
      initial?.question.type === 'choice'
        ? Object.entries(initial.question.criteria)
        : [
            ['', ''],
            ['', ''],
          ];
    for (const [name, description] of entries) optionRow(list, name ?? '', asText(description));
    const more = h('button', { type: 'button', class: 'add-row' }, '+ option');
    more.addEventListener('click', () => optionRow(list));
    body.append(h('div', { class: 'field' }, h('span', { class: 'label' }, 'Options'), list, more));
    read = () => {
      const criteria: Record<string, string | null> = {};
      for (const r of list.querySelectorAll('.row')) {
        const name = (r.querySelector('.option-name') as HTMLInputElement).value;
        const description = (r.querySelector('.option-description') as HTMLInputElement).value;
        criteria[name] = description === '' ? null : description;
      }
      return { type: 'choice', instructions: instructions.value, criteria };
    };
  } else {
    const list = h('ol', { class: 'list', start: '0', 'aria-label': 'Levels, lowest first' });
    const levels = initial?.question.type === 'score' ? initial.question.criteria : ['', '', ''];
    for (const l of levels) levelRow(list, asText(l));
    const more = h('button', { type: 'button', class: 'add-row' }, '+ level');
    more.addEventListener('click', () => levelRow(list));
    body.append(h('div', { class: 'field' }, h('span', { class: 'label' }, 'Levels (0 first)'), list, more));
    read = () => ({
      type: 'score',
      instructions: instructions.value,
      criteria: [...list.querySelectorAll<HTMLInputElement>('.level')].map((i) => i.value),
    });
  }

  const card: Card = { root, read: () => [id.value, read()] };
  cards.push(card);
  remove.addEventListener('click', () => {
    cards.splice(cards.indexOf(card), 1);
    root.remove();
  });
  container.append(root);
  return root;
}

/** Removes every question card (before an example fills the form). */
export function clearQuestions(): void {
  for (const c of cards.splice(0)) c.root.remove();
}

/** The questions as the request carries them, keyed by their ids, in the cards' order. */
export function readQuestions(): Record<string, Question> {
  return Object.fromEntries(cards.map((c) => c.read()));
}

/** The card of a question id (where its 422 entries are shown). */
export function cardOf(questionId: string): HTMLElement | undefined {
  return cards.find((c) => c.read()[0] === questionId)?.root;
}

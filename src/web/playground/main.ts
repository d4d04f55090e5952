// The playground page (/playground): a key (this tab's sessionStorage only), a model from
// /playground/models, a state, questions of the three types, Send; the answers drawn, a 422 shown
// at the field it concerns, any other error once in the answers panel (beside the form: nothing
// above Send ever moves while it is pressed), a held-out tiny-tasks ticket one click away, and the
// same request as curl or client SDK code.
import {
  ApiFailure,
  evaluate,
  listExamples,
  listModels,
  stateHash,
  type EvaluateRequest,
  type PlaygroundModel,
  type TaskExample,
  type ValidationError,
} from './api.js';
import { byId, h } from './dom.js';
import { addQuestion, cardOf, clearQuestions, readQuestions, readState, type QuestionType } from './editor.js';
import { showAnswers } from './render.js';
import { curlOf, sdkOf } from './snippets.js';

const KEY_STORAGE = 'assay-playground-key';
const key = byId<HTMLInputElement>('key');
const model = byId<HTMLSelectElement>('model');
const state = byId<HTMLTextAreaElement>('state');
const stateAsText = byId<HTMLInputElement>('state-text');
const questionList = byId<HTMLElement>('question-list');
const answers = byId<HTMLElement>('answers');
const requestError = byId<HTMLElement>('request-error');
const banner = byId<HTMLElement>('synthetic-banner');
const expected = byId<HTMLElement>('expected');
const copied = byId<HTMLElement>('copied');
let models: PlaygroundModel[] = [];
let examples: TaskExample[] | undefined;
let nextExample = 0;
/** What the error box shows: a key problem is cleared once a key works. */
let errorKind: 'key' | 'other' | undefined;

// The README's example request, so Send works at once.
state.value = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.';
addQuestion(questionList, 'noul', {
  id: 'refund',
  question: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
});
addQuestion(questionList, 'choice', {
  id: 'topic',
  question: {
    type: 'choice',
    instructions: 'What is the main topic?',
    criteria: { delivery: 'shipping, delays, damage', billing: null, product: 'the item itself' },
  },
});
addQuestion(questionList, 'score', {
  id: 'severity',
  question: { type: 'score', instructions: 'How severe is the complaint?', criteria: ['no issue', 'minor', 'serious'] },
});

for (const button of document.querySelectorAll<HTMLButtonElement>('[data-add]')) {
  button.addEventListener('click', () =>
    addQuestion(questionList, button.dataset.add as QuestionType)
      .querySelector<HTMLInputElement>('.question-id')
      ?.focus(),
  );
}

function clearErrors(): void {
  errorKind = undefined;
  for (const el of [requestError, ...document.querySelectorAll<HTMLElement>('.field-error')]) {
    el.hidden = true;
    el.textContent = '';
  }
  for (const el of document.querySelectorAll('.invalid')) el.classList.remove('invalid');
}

/** Scrolls `el` into view when it is off screen (on a narrow screen the answers panel is below the form). */
function reveal(el: HTMLElement): void {
  const r = el.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) el.scrollIntoView({ block: 'nearest' });
}

/**
 * The answers of an earlier request go once a later one fails: what is on screen is never stale.
 * Called after the error is shown, to point at it: the box above, or the form's field or question.
 */
function clearAnswers(): void {
  const where = requestError.hidden
    ? 'the error is shown in the form, at the field or question it concerns'
    : 'the error is above';
  answers.replaceChildren(h('p', { class: 'hint' }, `No answers: the request failed (${where}).`));
}

/** Shows `message` next to what `loc` names: the state, the model, a question's card, or the error box. */
function showAt(loc: Array<string | number>, message: string): HTMLElement {
  const [, field, questionId] = loc;
  let slot: HTMLElement | null | undefined;
  if (field === 'state') slot = document.querySelector<HTMLElement>('[data-error-for="state"]');
  else if (field === 'model') slot = document.querySelector<HTMLElement>('[data-error-for="model"]');
  else if (field === 'questions' && typeof questionId === 'string')
    slot = cardOf(questionId)?.querySelector<HTMLElement>('.field-error');
  slot ??= requestError;
  slot.hidden = false;
  slot.textContent = slot.textContent ? `${slot.textContent}\n${message}` : message;
  slot.closest('.question, .field')?.classList.add('invalid');
  return slot;
}

function showError(message: string, kind: 'key' | 'other' = 'other'): void {
  requestError.textContent = message;
  requestError.hidden = false;
  errorKind = kind;
  reveal(requestError);
}

const HINTS: Record<number, string> = {
  401: ' Check the API key.',
  403: ' This key may not use this model.',
  429: ' Rate limit of this key.',
  529: ' The engine queue is full.',
  503: ' The model is loading or restarting.',
};

function showFailure(error: unknown): void {
  if (!(error instanceof ApiFailure)) return showError(`The request failed: ${(error as Error).message}`);
  if (Array.isArray(error.detail)) {
    const slots = (error.detail as ValidationError[]).map((e) =>
      showAt(e.loc, `${e.msg} (${e.type} at ${e.loc.slice(1).join('.') || 'body'})`),
    );
    if (slots[0]) reveal(slots[0]);
    return;
  }
  // The wait is said once, in seconds (the body's own "retry after N ms" is dropped here).
  const detail = String(error.detail).replace(/;? *retry after \d+ ?ms\.?$/i, '');
  const retry = error.retryAfterSeconds !== undefined ? ` Retry in ${error.retryAfterSeconds} s.` : '';
  showError(
    `HTTP ${error.status}: ${detail}.${HINTS[error.status] ?? ''}${retry}`,
    error.status === 401 ? 'key' : 'other',
  );
}

const NO_KEY = 'No API key yet: paste the key the server printed at start (npm start prints one) into "API key".';

/** The request the form describes, or undefined after showing why it cannot be sent. */
function request(): EvaluateRequest | undefined {
  const read = readState(state.value, stateAsText.checked);
  if ('error' in read) {
    reveal(showAt(['body', 'state'], read.error));
    return undefined;
  }
  return { state: read.state, model: model.value || 'svc-latest', questions: readQuestions() };
}

function updateBanner(): void {
  const m = models.find((x) => x.name === model.value);
  banner.hidden = !m?.synthetic;
}

function label(m: PlaygroundModel): string {
  const notes = [
    ...(m.synthetic ? ['synthetic'] : m.task_only ? ['knows only its training task'] : []),
    m.warm ? 'warm' : 'cold: loads on first use',
  ];
  return `${m.name} (${notes.join('; ')})`;
}

/** Fills the model list from the server. Only the error box (beside the form) changes: nothing above Send moves. */
async function loadModels(asked = false): Promise<void> {
  if (!key.value.trim()) {
    if (asked) showError(NO_KEY, 'key');
    return;
  }
  try {
    models = await listModels(key.value.trim());
    const previous = model.value;
    model.replaceChildren(
      ...models.map((m) =>
        h('option', { value: m.name, title: `${m.description} (confidence: ${m.confidence})` }, label(m)),
      ),
    );
    model.value = models.some((m) => m.name === previous)
      ? previous
      : ((models.find((m) => m.name === 'svc-latest') ?? models[0])?.name ?? '');
    updateBanner();
    if (errorKind === 'key') clearErrors();
  } catch (error) {
    showFailure(error);
  }
}

async function send(): Promise<void> {
  clearErrors();
  if (!key.value.trim()) {
    showError(NO_KEY, 'key');
    return clearAnswers();
  }
  const body = request();
  if (!body) return clearAnswers();
  const sendButton = byId<HTMLButtonElement>('send');
  sendButton.disabled = true;
  answers.setAttribute('aria-busy', 'true');
  try {
    const formula = models.find((m) => m.name === body.model)?.confidence;
    showAnswers(answers, await evaluate(key.value.trim(), body), formula);
  } catch (error) {
    showFailure(error);
    clearAnswers();
  } finally {
    sendButton.disabled = false;
    answers.removeAttribute('aria-busy');
  }
}

/** One click: a held-out line of tiny-tasks-1's task in the form, with the answers it should get. */
async function loadExample(): Promise<void> {
  clearErrors();
  try {
    examples ??= await listExamples();
  } catch (error) {
    return showFailure(error);
  }
  const ex = examples[nextExample++ % Math.max(1, examples.length)];
  if (!ex) return showError('This server has no held-out examples.');
  state.value = typeof ex.state === 'string' ? ex.state : JSON.stringify(ex.state, null, 2);
  stateAsText.checked = false;
  clearQuestions();
  for (const [id, question] of Object.entries(ex.questions)) addQuestion(questionList, question.type, { id, question });
  if (![...model.options].some((o) => o.value === ex.model)) model.append(h('option', { value: ex.model }, ex.model));
  model.value = ex.model;
  updateBanner();
  const said = (v: boolean | string | number) => (v === true ? 'yes' : v === false ? 'no' : String(v));
  expected.textContent = `Held-out ticket ${nextExample} of ${examples.length} for ${ex.model}. Right answers: ${Object.entries(
    ex.expected,
  )
    .map(([id, v]) => `${id} ${said(v)}`)
    .join(', ')}.`;
  expected.hidden = false;
  answers.replaceChildren(h('p', { class: 'hint' }, 'Send the request to see its answers.'));
}

async function copy(text: string, what: string): Promise<void> {
  byId<HTMLTextAreaElement>('snippet').value = text;
  byId<HTMLElement>('snippet-box').hidden = false;
  try {
    await navigator.clipboard.writeText(text);
    copied.textContent = `${what} copied to the clipboard.`;
  } catch {
    copied.textContent = `${what} is below (the clipboard is not available here).`;
  }
}

key.value = sessionStorage.getItem(KEY_STORAGE) ?? '';
key.addEventListener('change', () => {
  sessionStorage.setItem(KEY_STORAGE, key.value);
  void loadModels();
});
model.addEventListener('change', updateBanner);
byId('load-models').addEventListener('click', () => void loadModels(true));
byId('example').addEventListener('click', () => void loadExample());
byId('send').addEventListener('click', () => void send());
byId('copy-curl').addEventListener('click', () => {
  clearErrors();
  const body = request();
  if (body) void (async () => copy(curlOf(location.origin, body, await stateHash(body.state)), 'curl command'))();
});
byId('copy-sdk').addEventListener('click', () => {
  clearErrors();
  const body = request();
  if (body) void copy(sdkOf(location.origin, body), 'Client SDK code');
});
// Ctrl/Cmd+Enter sends from anywhere in the form.
document.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send();
});
if (key.value) void loadModels();

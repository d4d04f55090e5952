// The playground page (/playground): a key (this tab's sessionStorage only), a model from
// /playground/models, a state, questions of the three types, Send; the answers drawn, errors shown
// at the field they concern, and the same request as curl or client SDK code.
import { ApiFailure, evaluate, listModels, stateHash, type EvaluateRequest, type PlaygroundModel, type ValidationError } from './api.js';
import { byId, h } from './dom.js';
import { addQuestion, cardOf, readQuestions, readState, type QuestionType } from './editor.js';
import { showAnswers } from './render.js';
import { curlOf, sdkOf } from './snippets.js';

const KEY_STORAGE = 'assay-playground-key';
const key = byId<HTMLInputElement>('key');
const model = byId<HTMLSelectElement>('model');
const state = byId<HTMLTextAreaElement>('state');
const questionList = byId<HTMLElement>('question-list');
const answers = byId<HTMLElement>('answers');
const requestError = byId<HTMLElement>('request-error');
const banner = byId<HTMLElement>('synthetic-banner');
const copied = byId<HTMLElement>('copied');
let models: PlaygroundModel[] = [];

// The README's example request, so Send works at once.
state.value = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund.';
addQuestion(questionList, 'noul', { id: 'refund', question: { type: 'noul', instructions: 'Does the customer ask for a refund?' } });
addQuestion(questionList, 'choice', {
  id: 'topic',
  question: { type: 'choice', instructions: 'What is the main topic?', criteria: { delivery: 'shipping, delays, damage', billing: null, product: 'the item itself' } },
});
addQuestion(questionList, 'score', { id: 'severity', question: { type: 'score', instructions: 'How severe is the complaint?', criteria: ['no issue', 'minor', 'serious'] } });

for (const button of document.querySelectorAll<HTMLButtonElement>('[data-add]')) {
  button.addEventListener('click', () =>
    addQuestion(questionList, button.dataset.add as QuestionType)
      .querySelector<HTMLInputElement>('.question-id')
      ?.focus(),
  );
}

function clearErrors(): void {
  requestError.hidden = true;
  for (const el of document.querySelectorAll<HTMLElement>('.field-error')) {
    el.hidden = true;
    el.textContent = '';
  }
  for (const el of document.querySelectorAll('.invalid')) el.classList.remove('invalid');
}

/** Shows `message` next to what `loc` names: the state, the model, a question's card, or the form. */
function showAt(loc: Array<string | number>, message: string): void {
  const [, field, questionId] = loc;
  let slot: HTMLElement | null | undefined;
  if (field === 'state') slot = document.querySelector<HTMLElement>('[data-error-for="state"]');
  else if (field === 'model') slot = document.querySelector<HTMLElement>('[data-error-for="model"]');
  else if (field === 'questions' && typeof questionId === 'string') slot = cardOf(questionId)?.querySelector<HTMLElement>('.field-error');
  slot ??= requestError;
  slot.hidden = false;
  slot.textContent = slot.textContent ? `${slot.textContent}\n${message}` : message;
  slot.closest('.question, .field')?.classList.add('invalid');
}

function showFailure(error: unknown): void {
  if (!(error instanceof ApiFailure)) return showAt([], `The request failed: ${(error as Error).message}`);
  if (Array.isArray(error.detail)) {
    for (const e of error.detail as ValidationError[]) showAt(e.loc, `${e.msg} (${e.type} at ${e.loc.slice(1).join('.') || 'body'})`);
    return;
  }
  const retry = error.retryAfterSeconds !== undefined ? ` Retry after ${error.retryAfterSeconds} s.` : '';
  const hint: Record<number, string> = {
    401: ' Check the API key.',
    403: ' This key may not use this model.',
    429: ' Rate limit of this key.',
    529: ' The engine queue is full.',
    503: ' The model is loading or restarting.',
  };
  showAt([], `HTTP ${error.status}: ${String(error.detail)}.${hint[error.status] ?? ''}${retry}`);
}

function request(): EvaluateRequest {
  return { state: readState(state.value).state, model: model.value || 'svc-latest', questions: readQuestions() };
}

function updateBanner(): void {
  const m = models.find((x) => x.name === model.value);
  banner.hidden = !m?.synthetic;
}

async function loadModels(): Promise<void> {
  clearErrors();
  try {
    models = await listModels(key.value);
    model.replaceChildren(...models.map((m) => h('option', { value: m.name }, m.synthetic ? `${m.name} (synthetic)` : m.name)));
    const latest = models.find((m) => m.name === 'svc-latest');
    if (latest) model.value = latest.name;
    updateBanner();
  } catch (error) {
    showFailure(error);
  }
}

async function send(): Promise<void> {
  clearErrors();
  const sendButton = byId<HTMLButtonElement>('send');
  sendButton.disabled = true;
  answers.setAttribute('aria-busy', 'true');
  try {
    showAnswers(answers, await evaluate(key.value, request()));
  } catch (error) {
    showFailure(error);
  } finally {
    sendButton.disabled = false;
    answers.removeAttribute('aria-busy');
  }
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
byId('load-models').addEventListener('click', () => void loadModels());
byId('send').addEventListener('click', () => void send());
byId('copy-curl').addEventListener('click', () => void (async () => copy(curlOf(location.origin, request(), await stateHash(request().state)), 'curl command'))());
byId('copy-sdk').addEventListener('click', () => void copy(sdkOf(location.origin, request()), 'Client SDK code'));
// Ctrl/Cmd+Enter sends from anywhere in the form.
document.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send();
});
if (key.value) void loadModels();

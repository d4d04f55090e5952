// Reading the order a request's question ids and choice options were sent in from its JSON text,
// and writing a response (and a request) in that order (src/protocol/order.ts).
import { describe, expect, it } from 'vitest';
import {
  questionOrder,
  sentOrder,
  sentQuestionsOrder,
  writeRequest,
  writeResponse,
  type Question,
  type SystemOneResponse,
} from '../../src/protocol/index.js';

const parse = (text: string) => JSON.parse(text) as { questions: Record<string, Question> };

describe('sentOrder', () => {
  it('reads question ids and choice options as sent, where an object lists integer-like keys first', () => {
    const text =
      '{"state": {"3": [1, "}{"], "1": null}, "model": "m", "questions": {' +
      '"10": {"type": "choice", "criteria": {"3": null, "1": {"2": 1}, "2": "x", "01": null, "b": null, "0": null}},' +
      ' "9": {"criteria": {"true": "y"}, "type": "noul"}, "x": {"type": "score", "criteria": ["a", "b"]}}}';
    expect(Object.keys(parse(text).questions)).toEqual(['9', '10', 'x']);
    expect(sentOrder(text)).toEqual([
      { id: '10', options: ['3', '1', '2', '01', 'b', '0'] },
      { id: '9', options: ['true'] },
      { id: 'x' },
    ]);
    expect(questionOrder(parse(text).questions, sentOrder(text))).toEqual([
      { id: '10', options: ['3', '1', '2', '01', 'b', '0'] },
      { id: '9' },
      { id: 'x' },
    ]);
  });

  it('a repeated key keeps its first place and its last value, as JSON.parse does', () => {
    const text =
      '{"questions": {"2": {"type": "noul"}}, "questions": {"2": {"type": "noul"}, "1": {"type": "choice", "criteria": {"a": 1}},' +
      ' "2": {"type": "choice", "criteria": {"9": null, "8": null, "9": "again"}}}}';
    expect(Object.keys(parse(text).questions)).toEqual(['1', '2']);
    expect(questionOrder(parse(text).questions, sentOrder(text))).toEqual([
      { id: '2', options: ['9', '8'] },
      { id: '1', options: ['a'] },
    ]);
  });

  it('decodes escaped keys, `__proto__` included, and skips strings holding quotes and brackets', () => {
    const text =
      '{"questions":{"\\u0031":{"type":"choice","criteria":{"\\"}\\\\":null,"__proto__":"{[\\"","1":null}},"q\\"}":{"type":"noul"}}}';
    const { questions } = parse(text);
    expect(questionOrder(questions, sentOrder(text))).toEqual([
      { id: '1', options: ['"}\\', '__proto__', '1'] },
      { id: 'q"}' },
    ]);
  });

  it('a questions map alone (assay eval --questions)', () => {
    expect(sentQuestionsOrder('{"2": {"type": "noul"}, "1": {"type": "noul"}}')).toEqual([{ id: '2' }, { id: '1' }]);
  });

  it('a text of another shape has no order, and an order that does not name the keys is not used', () => {
    expect(sentOrder('[1, 2]')).toBeUndefined();
    expect(sentOrder('{"questions": [1]}')).toBeUndefined();
    const questions = parse('{"questions": {"2": {"type": "noul"}, "1": {"type": "noul"}}}').questions;
    expect(questionOrder(questions, [{ id: '2' }])).toEqual([{ id: '1' }, { id: '2' }]);
    expect(questionOrder(questions, [{ id: '2' }, { id: '2' }])).toEqual([{ id: '1' }, { id: '2' }]);
    expect(questionOrder(questions)).toEqual([{ id: '1' }, { id: '2' }]);
  });
});

describe('writing in the sent order', () => {
  const response: SystemOneResponse = {
    model: 'm',
    answers: {
      '1': { type: 'choice', choice: 'b', probabilities: { '2': 0.25, '10': 0.25, b: 0.5 }, confidence: 0.1 },
      '2': {
        type: 'score',
        score: 1,
        legend: { '0': 'lo', '1': 'hi' },
        probabilities: { '0': 0.5, '1': 0.5 },
        confidence: 0,
      },
    },
    usage: { input_tokens: 3, output_tokens: 4 },
  };

  it('a response: answers and choice probabilities as sent, score keys by level, the same JSON otherwise', () => {
    const text = writeResponse(response, [{ id: '2' }, { id: '1', options: ['b', '10', '2'] }]);
    expect(text).toBe(
      '{"model":"m","answers":{"2":{"type":"score","score":1,"legend":{"0":"lo","1":"hi"},"probabilities":{"0":0.5,"1":0.5},"confidence":0},' +
        '"1":{"type":"choice","choice":"b","probabilities":{"b":0.5,"10":0.25,"2":0.25},"confidence":0.1}},"usage":{"input_tokens":3,"output_tokens":4}}',
    );
    expect(JSON.parse(text)).toEqual(response);
    expect(writeResponse(response, undefined)).toBe(JSON.stringify(response));
  });

  it('keys the order leaves out are still written, after the others', () => {
    expect(JSON.parse(writeResponse(response, [{ id: '2' }]))).toEqual(response);
  });

  it('a request: questions and choice options as sent', () => {
    const request = {
      state: 's',
      model: 'm',
      questions: {
        '1': { type: 'noul' as const },
        '7': { type: 'choice' as const, instructions: 'i', criteria: { '2': null, '1': 'one', z: null } },
      },
    };
    expect(writeRequest(request, [{ id: '7', options: ['z', '2', '1'] }, { id: '1' }])).toBe(
      '{"state":"s","model":"m","questions":{"7":{"type":"choice","instructions":"i","criteria":{"z":null,"2":null,"1":"one"}},"1":{"type":"noul"}}}',
    );
  });
});

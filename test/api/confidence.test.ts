// --confidence reaches the answers and the playground's model list, over a real socket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostedChoiceConfidence, hostedScoreConfidence } from '../../src/engine/execution/answers.js';
import { KEY, mixedRequest, startListening, type TestServer } from './helpers.js';

let s: TestServer;
let base: string;
beforeAll(async () => {
  ({ base, ...s } = await startListening({ logging: false, confidence: 'hosted', engine: { confidence: 'hosted' } }));
});
afterAll(() => s.close());

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

describe('--confidence hosted', () => {
  it("answers choice and score with the hosted service's formulas", async () => {
    const res = await fetch(`${base}/v1/systemone`, { method: 'POST', headers, body: JSON.stringify(mixedRequest()) });
    const { answers } = (await res.json()) as {
      answers: Record<string, { probabilities: Record<string, number>; confidence: number }>;
    };
    expect(answers.channel!.confidence).toBeCloseTo(
      hostedChoiceConfidence(Object.values(answers.channel!.probabilities)),
      9,
    );
    expect(answers.punctuality!.confidence).toBeCloseTo(
      hostedScoreConfidence(Object.values(answers.punctuality!.probabilities)),
      9,
    );
  });

  it('the playground lists each model with its confidence formula', async () => {
    const res = await fetch(`${base}/playground/models`, { headers });
    const { models } = (await res.json()) as { models: Array<{ confidence: string }> };
    expect(models.length).toBeGreaterThan(0);
    expect(models.every((m) => m.confidence === 'hosted')).toBe(true);
  });
});

// --confidence reaches the answers and the playground's model list, over a real socket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadServeSettings } from '../../src/config/load.js';
import { settingsFor, type ServeSettings } from '../../src/config/settings.js';
import { hostedChoiceConfidence, hostedScoreConfidence } from '../../src/engine/execution/answers.js';
import { KEY, mixedRequest, startListening, type TestServer } from './helpers.js';

/** The settings `assay serve` parses from these flags and variables. */
function settings(argv: string[], env: Record<string, string> = {}): ServeSettings {
  const parsed = loadServeSettings(argv, env);
  if (parsed === 'help') throw new Error('help');
  return parsed;
}

let s: TestServer;
let base: string;
beforeAll(async () => {
  // The server and its engine get the options `assay serve --confidence hosted` gives them.
  const hosted = settings(['--confidence', 'hosted']);
  ({ base, ...s } = await startListening({
    logging: false,
    confidence: settingsFor('server', hosted).confidence,
    engine: { confidence: settingsFor('engine', hosted).confidence },
  }));
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

  it('one setting reaches the engine and the pages: --confidence, else ASSAY_CONFIDENCE, else entropy; a bad value is refused', () => {
    const both = (x: ServeSettings) => [settingsFor('engine', x).confidence, settingsFor('server', x).confidence];
    expect(both(settings([]))).toEqual(['entropy', 'entropy']);
    expect(both(settings([], { ASSAY_CONFIDENCE: 'hosted' }))).toEqual(['hosted', 'hosted']);
    expect(both(settings(['--confidence', 'entropy'], { ASSAY_CONFIDENCE: 'hosted' }))).toEqual(['entropy', 'entropy']);
    expect(() => settings(['--confidence', 'max'])).toThrow(ConfigError);
    expect(() => settings(['--confidence', 'max'])).toThrow(/--confidence/);
  });
});

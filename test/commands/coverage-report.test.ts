// The coverage section of assay eval --dataset on a four-line dataset worked out by hand: per type,
// per tag and per question id asked on several lines, at two budgets; choice by confidence and by
// the chosen option's probability; score within the tolerance; and the thresholds, loaded as is as
// an escalating registry entry's `below`, re-ask exactly the answers the report did not keep.
import { describe, expect, it } from 'vitest';
import type { Answer, Question } from '../../src/protocol/index.js';
import { coverageMarkdown, coverageReport, coverageRows } from '../../src/commands/dataset/coverage-report.js';
import type { DatasetLine } from '../../src/commands/dataset/read.js';
import { checkRegistry, loadRegistry } from '../../src/registry/registry.js';
import { shouldEscalate } from '../../src/service/index.js';

const Q: Record<string, Question> = {
  urgent: { type: 'noul', instructions: 'Urgent?' },
  once: { type: 'noul', instructions: 'Asked on one line only' },
  topic: { type: 'choice', instructions: 'Topic?', criteria: { x: null, y: null } },
  level: { type: 'score', instructions: 'Level?', criteria: ['low', 'mid', 'high'] },
};
const noul = (p: number): Answer => ({ type: 'noul', noul: p });
const choice = (c: 'x' | 'y', px: number, confidence: number): Answer => ({
  type: 'choice',
  choice: c,
  probabilities: { x: px, y: 1 - px },
  confidence,
});
const score = (s: number, confidence: number): Answer => ({
  type: 'score',
  score: s,
  legend: { 0: 'low', 1: 'mid', 2: 'high' },
  probabilities: { 0: 0.2, 1: 0.5, 2: 0.3 },
  confidence,
});

// Certainty, right or wrong:
//   urgent (noul, max(p, 1 − p)): 0.95 ✓, 0.8 ✓, 0.6 ✗, 0.7 ✗;  once: 0.9 ✓ (line 1 only)
//   topic (choice): confidence 0.5 ✓, 0.9 ✗, 0.3 ✓, 0.4 ✓; chosen option probability 0.9, 0.6, 0.7, 0.8
//   level (score, lines 1–2): confidence 0.2, right within 0.5 (1.4 for 1); 0.6, 0.6 for 2 is not
const RAW: Array<Pick<DatasetLine, 'tags' | 'expected'> & { answers: Record<string, Answer> }> = [
  {
    tags: ['a', 'c'],
    expected: { urgent: true, once: true, topic: 'x', level: 1 },
    answers: { urgent: noul(0.95), once: noul(0.9), topic: choice('x', 0.9, 0.5), level: score(1.4, 0.2) },
  },
  {
    tags: ['a'],
    expected: { urgent: false, topic: 'x', level: 2 },
    answers: { urgent: noul(0.2), topic: choice('y', 0.4, 0.9), level: score(0.6, 0.6) },
  },
  {
    tags: ['b'],
    expected: { urgent: false, topic: 'x' },
    answers: { urgent: noul(0.6), topic: choice('x', 0.7, 0.3) },
  },
  { tags: ['b'], expected: { urgent: true, topic: 'y' }, answers: { urgent: noul(0.3), topic: choice('y', 0.2, 0.4) } },
];
const LINES: Array<DatasetLine & { answers: Record<string, Answer> }> = RAW.map((l) => ({
  state: 's',
  questions: Object.fromEntries(Object.keys(l.answers).map((id) => [id, Q[id]!])),
  ...l,
}));

const report = (tolerance = 0.5) =>
  coverageReport(
    LINES,
    LINES.map((l) => l.answers),
    [0.05, 0.3],
    tolerance,
  );

/** budget → [coverage, kept, errors, threshold] of a group. */
const at = (g: { atBudget: Array<{ coverage: number; kept: number; errors: number; threshold: number | null }> }) =>
  g.atBudget.map((c) => [c.coverage, c.kept, c.errors, c.threshold === null ? null : +c.threshold.toFixed(12)]);

describe('the coverage report of a dataset', () => {
  it('per type: noul by max(p, 1 − p), choice by confidence and by the chosen option probability, score within the tolerance', () => {
    const r = report();
    // noul 0.95 ✓ 0.9 ✓ 0.8 ✓ | 0.7 ✗ | 0.6 ✗: 5% keeps 3 (threshold halfway, 0.75); 30% keeps 4 (1 in 4).
    expect(r.byType.noul).toMatchObject({ count: 5, measure: 'max(p, 1 − p)' });
    expect(at(r.byType.noul!)).toEqual([
      [0.6, 3, 0, 0.75],
      [0.8, 4, 1, 0.65],
    ]);
    // choice by confidence, 0.9 ✗ first: nothing at 5%; all 4 at 30% (1 in 4), the least certain 0.3.
    expect(at(r.byType.choice!)).toEqual([
      [0, 0, 0, null],
      [1, 4, 1, 0.3],
    ]);
    // by the chosen option probability, 0.9 ✓ 0.8 ✓ 0.7 ✓ | 0.6 ✗: 3 at 5% (0.65), all at 30%.
    expect(r.byType.choice!.alternative).toMatchObject({ measure: 'chosen option probability', count: 4 });
    expect(at(r.byType.choice!.alternative!)).toEqual([
      [0.75, 3, 0, 0.65],
      [1, 4, 1, 0.6],
    ]);
    // score 0.6 ✗ (0.6 against 2) then 0.2 ✓: nothing at either budget; with tolerance 1.5 both are right.
    expect(at(r.byType.score!)).toEqual([
      [0, 0, 0, null],
      [0, 0, 0, null],
    ]);
    expect(at(report(1.5).byType.score!)).toEqual([
      [1, 2, 0, 0.2],
      [1, 2, 0, 0.2],
    ]);
    expect(r.byType.noul!.curve.map((p) => [p.threshold, p.kept, p.errors])).toEqual([
      [0.95, 1, 0],
      [0.9, 2, 0],
      [0.8, 3, 0],
      [0.7, 4, 1],
      [0.6, 5, 2],
    ]);
  });

  it('per tag, and per question id only where the id is asked on several lines', () => {
    const r = report();
    expect(Object.keys(r.byTag).sort()).toEqual(['a', 'b', 'c']);
    // tag a (lines 1–2): noul 0.95 ✓ 0.9 ✓ 0.8 ✓; choice 0.9 ✗ 0.5 ✓; tag b: noul 0.7 ✗ 0.6 ✗.
    expect(at(r.byTag.a!.noul!)[0]).toEqual([1, 3, 0, 0.8]);
    expect(at(r.byTag.a!.choice!)).toEqual([
      [0, 0, 0, null],
      [0, 0, 0, null],
    ]);
    expect(r.byTag.a!.score!.count).toBe(2);
    expect(at(r.byTag.b!.noul!)[0]).toEqual([0, 0, 0, null]);
    expect(r.byTag.b!.score).toBeUndefined();
    expect(r.byTag.c!.noul!.count).toBe(2);
    // urgent: 0.95 ✓ 0.8 ✓ | 0.7 ✗ 0.6 ✗; "once" is asked on one line: no row of its own.
    expect(Object.keys(r.byQuestion).sort()).toEqual(['level', 'topic', 'urgent']);
    expect(at(r.byQuestion.urgent!)).toEqual([
      [0.5, 2, 0, 0.75],
      [0.5, 2, 0, 0.75],
    ]);
  });

  it('says when there are too few answers, and how many would do', () => {
    const r = report();
    const rows = coverageRows(r, 0);
    // noul: 3 kept without error at 5% need ⌈59 / 0.6⌉ = 99 labeled; none kept: at least 59.
    expect(rows.find((x) => x[0] === 'noul')).toEqual([
      'noul',
      'max(p, 1 − p)',
      '5',
      '0.600',
      '3 (0)',
      '0.750',
      '0.000 (0.632)', // 1 − 0.05^(1/3)
      'no: ~99 needed',
    ]);
    expect(rows.find((x) => x[0] === 'choice')![7]).toBe('no: none kept (≥ 59 needed)');
    expect(rows.map((x) => x[0])).toEqual([
      'noul',
      'choice',
      'choice',
      'score',
      'tag a · noul',
      'tag a · choice',
      'tag a · score',
      'tag c · noul',
      'tag c · choice',
      'tag c · score',
      'tag b · noul',
      'tag b · choice',
      'question urgent (noul)',
      'question topic (choice)',
      'question level (score)',
    ]);
    const md = coverageMarkdown(r).join('\n');
    expect(md).toContain('## Coverage at 5% error');
    expect(md).toContain('## Coverage at 30% error');
  });

  it('the thresholds load as is as an escalating entry’s below, which re-asks exactly the answers not kept', () => {
    const r = report();
    expect(r.thresholds).toEqual({
      '0.05': { noul: 0.75, choice: null, score: null },
      '0.3': { noul: expect.closeTo(0.65, 12), choice: 0.3, score: null },
    });
    const base = loadRegistry();
    for (const [budget, i] of [
      ['0.05', 0],
      ['0.3', 1],
    ] as const) {
      const below = JSON.parse(JSON.stringify(r.thresholds))[budget];
      const registry = checkRegistry(
        {
          ...base,
          models: {
            ...base.models,
            cascade: {
              escalate: { first: 'svc-1.13.0', second: 'tiny-tasks-1', below },
              description: 'd',
              release_date: '2026-01-01',
            },
          },
        },
        base.file,
      );
      const loaded = registry.models.cascade!.escalate!.below;
      expect(loaded).toEqual(below);
      const answers = LINES.flatMap((l) => Object.values(l.answers));
      const keptByType = Object.values(r.byType).reduce((n, g) => n + g.atBudget[i]!.kept, 0);
      expect(answers.filter((a) => !shouldEscalate(a, loaded))).toHaveLength(keptByType);
    }
  });
});

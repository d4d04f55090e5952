// The model families, one line each (each described in its own folder: descriptor.ts). Every other
// list of families is this one's: the names (the registry's `family`, `assay eval --compare`),
// detection (detect.ts: in this order, rules marked `last` after the others), loading (index.ts),
// the planner's prompt contracts, the hub fetcher's selection, `assay models`, the file-formats page.
// Adding a family: its folder and its line here (CONTRIBUTING.md, "A model family").
import { arbiter } from './arbiter/descriptor.js';
import { deciderSlots } from './decider-slots/descriptor.js';
import { deciderLabels } from './decider/descriptor.js';
import { decision } from './decision/descriptor.js';
import { decoder } from './decoder/descriptor.js';
import type { FamilyDescriptor } from './descriptor.js';
import { kev } from './kev/descriptor.js';
import { labelTokens } from './label-tokens/descriptor.js';
import { laya } from './laya/descriptor.js';
import { nli } from './nli/descriptor.js';

export const FAMILIES = [
  decoder,
  deciderLabels,
  labelTokens,
  laya,
  nli,
  kev,
  decision,
  deciderSlots,
  arbiter,
] as const satisfies readonly FamilyDescriptor[];

export type FamilyName = (typeof FAMILIES)[number]['name'];

/** Every family's name, in the list's order. */
export const FAMILY_NAMES = FAMILIES.map((f) => f.name) as [FamilyName, ...FamilyName[]];

/** The family of a folder that nothing declares and whose files show none other: the list's first. */
export const DEFAULT_FAMILY: FamilyName = FAMILIES[0].name;

/** A family by its name (undefined: no such family). */
export function familyNamed(name: string): FamilyDescriptor | undefined {
  return (FAMILIES as readonly FamilyDescriptor[]).find((f) => f.name === name);
}

/** Whether the family is a row family (a causal-row or encoder graph), else the decoder engine runs it. */
export function isRowFamily(name: string): boolean {
  return familyNamed(name)?.engine !== 'decoder-engine';
}

// The engines field is a promise to operators: every Node version it admits runs every package the
// install brings. A dependency whose own engines field excludes the oldest Node we admit breaks it
// (cookie@2, pulled in by fastify's light-my-request, says node >=22 while we said >=20).
import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<
    string,
    { version?: string; engines?: { node?: string } | string[]; dev?: boolean; optional?: boolean }
  >;
};

describe('engines', () => {
  it('the oldest Node our engines field admits satisfies every installed package engines field', () => {
    const oldest = semver.minVersion(pkg.engines.node)!;
    const excluded = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !p.optional && p.engines && !Array.isArray(p.engines) && p.engines.node)
      .filter(([, p]) => !semver.satisfies(oldest, (p.engines as { node: string }).node))
      .map(
        ([path, p]) =>
          `${path.replace(/^.*node_modules\//, '')}@${p.version} needs node ${(p.engines as { node: string }).node}`,
      );
    expect(excluded, `package.json says node ${pkg.engines.node}`).toEqual([]);
  });

  it('the Node running the tests is one our engines field admits', () => {
    expect(semver.satisfies(process.versions.node, pkg.engines.node)).toBe(true);
  });
});

// `semver` (installed with the runtime dependencies) ships no types and `@types/semver` is not installed:
// declare the part tools/test/node-versions.spec.ts uses (see node_modules/semver/README.md).
declare module 'semver' {
  interface SemVer {
    version: string;
  }

  /** Whether every version `sub` admits is one `dom` admits. */
  export function subset(sub: string, dom: string): boolean;
  export function satisfies(version: string, range: string): boolean;
  export function minVersion(range: string): SemVer | null;
  export function gte(a: string | SemVer, b: string | SemVer): boolean;
  export function validRange(range: string): string | null;
}

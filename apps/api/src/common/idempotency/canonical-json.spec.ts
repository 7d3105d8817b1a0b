import { canonicalJson } from './idempotency.interceptor';

describe('canonicalJson (idempotency fingerprints)', () => {
  it.each([
    [
      { b: 1, a: 2 },
      { a: 2, b: 1 },
    ],
    [{ a: { y: [1, { d: 1, c: 2 }], x: null } }, { a: { x: null, y: [1, { c: 2, d: 1 }] } }],
    [{ a: 1, skip: undefined }, { a: 1 }],
  ])('gives %p and %p one fingerprint', (left, right) => {
    expect(canonicalJson(left)).toBe(canonicalJson(right));
  });

  it.each([
    [{ a: 1 }, { a: '1' }],
    [
      [1, 2],
      [2, 1],
    ],
    [{ a: null }, {}],
  ])('tells %p and %p apart', (left, right) => {
    expect(canonicalJson(left)).not.toBe(canonicalJson(right));
  });
});

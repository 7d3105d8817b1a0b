import { isPlan, planIncludes } from './plans';

describe('planIncludes', () => {
  it.each([
    ['free', 'free', true],
    ['free', 'pro', false],
    ['pro', 'free', true],
    ['pro', 'business', false],
    ['business', 'pro', true],
    ['business', 'business', true],
    ['gold', 'free', false],
    ['free', 'gold', false],
  ])('account on %s, connector for %s -> %s', (have, need, expected) => {
    expect(planIncludes(have, need)).toBe(expected);
  });

  it.each([
    ['free', true],
    ['business', true],
    ['Free', false],
    ['', false],
    [undefined, false],
  ])('isPlan(%p) = %p', (value, expected) => {
    expect(isPlan(value)).toBe(expected);
  });
});

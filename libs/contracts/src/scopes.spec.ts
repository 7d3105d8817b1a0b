import * as domain from '@lockstep/domain';
import { ID_PREFIX, isId, newId } from './ids';
import { isScope, scopeAllows } from './scopes';

describe('ids', () => {
  it('re-exports the domain ids, so a client and the server make and recognise the same ids', () => {
    expect(newId).toBe(domain.newId);
    expect(isId).toBe(domain.isId);
    expect(ID_PREFIX).toBe(domain.ID_PREFIX);
  });
});

describe('scopes', () => {
  it.each([
    ['read', 'read', true],
    ['read', 'operate', false],
    ['read', 'readwrite', false],
    ['operate', 'read', true],
    ['operate', 'operate', true],
    ['operate', 'readwrite', false],
    ['readwrite', 'read', true],
    ['readwrite', 'operate', true],
    ['readwrite', 'readwrite', true],
  ] as const)('a %s key may call a %s endpoint: %p', (have, need, ok) =>
    expect(scopeAllows(have, need)).toBe(ok),
  );

  it.each([
    ['read', true],
    ['admin', false],
    ['', false],
    [undefined, false],
  ])('isScope(%p) = %p', (v, ok) => expect(isScope(v)).toBe(ok));
});

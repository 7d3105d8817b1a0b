import { credentialSecrets, redactSecrets } from './redact';

describe('redactSecrets', () => {
  it.each([
    [
      'password authentication failed for user "bob"',
      ['s3cret'],
      'password authentication failed for user "bob"',
    ],
    ['could not connect with s3cret', ['s3cret'], 'could not connect with ***'],
    ['bad url postgres://bob:s3cret@db:5432/x', [], 'bad url postgres://bob:***@db:5432/x'],
    ['bad url mysql://bob:p%40ss@db/x', ['p@ss'], 'bad url mysql://bob:***@db/x'],
    ['echo p%40ss and p@ss', ['p@ss'], 'echo *** and ***'],
    ['whole postgres://u:pw@h/db string', ['postgres://u:pw@h/db'], 'whole *** string'],
    ['a.b*c a.b*c', ['a.b*c'], '*** ***'],
    ['nothing to hide', ['', null, undefined], 'nothing to hide'],
    ['longer secret first: abcdef', ['abc', 'abcdef'], 'longer secret first: ***'],
    ['two urls a://u:p@h and b+c://v:q:r@h/x', [], 'two urls a://u:***@h and b+c://v:***@h/x'],
    [
      'no password here: http://host/path@x and 1://u:p@h',
      [],
      'no password here: http://host/path@x and 1://u:p@h',
    ],
    ['a secret with $& and (groups)|[sets]', ['$& and (groups)|[sets]'], 'a secret with ***'],
  ] as const)('%s', (text, secrets, expected) => {
    expect(redactSecrets(text, secrets)).toBe(expected);
  });

  it('redacts a 1 MB secret, and a 1 MB text, without building a pattern from either', () => {
    const secret = `postgres://u:${'p'.repeat(1_048_576)}@db/x`;
    const started = Date.now();
    expect(redactSecrets(`could not connect to ${secret} (refused)`, [secret])).toBe(
      'could not connect to *** (refused)',
    );
    const long = `echo ${'a'.repeat(1_048_576)}://u:${'q'.repeat(1_048_576)}@h`;
    expect(redactSecrets(long, ['unrelated'])).toBe(`echo ${'a'.repeat(1_048_576)}://u:***@h`);
    expect(redactSecrets('x'.repeat(1_048_576), ['y'.repeat(1_048_576)])).toHaveLength(1_048_576);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('collects every non-empty credential value', () => {
    expect(credentialSecrets({ connectionString: 'postgres://x', token: '', other: undefined })).toEqual([
      'postgres://x',
    ]);
  });
});

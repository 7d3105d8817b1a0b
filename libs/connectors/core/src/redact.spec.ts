import { credentialSecrets, redactSecrets } from './redact';

describe('redactSecrets', () => {
  it.each([
    ['password authentication failed for user "bob"', ['s3cret'], 'password authentication failed for user "bob"'],
    ['could not connect with s3cret', ['s3cret'], 'could not connect with ***'],
    ['bad url postgres://bob:s3cret@db:5432/x', [], 'bad url postgres://bob:***@db:5432/x'],
    ['bad url mysql://bob:p%40ss@db/x', ['p@ss'], 'bad url mysql://bob:***@db/x'],
    ['echo p%40ss and p@ss', ['p@ss'], 'echo *** and ***'],
    ['whole postgres://u:pw@h/db string', ['postgres://u:pw@h/db'], 'whole *** string'],
    ['a.b*c a.b*c', ['a.b*c'], '*** ***'],
    ['nothing to hide', ['', null, undefined], 'nothing to hide'],
    ['longer secret first: abcdef', ['abc', 'abcdef'], 'longer secret first: ***'],
  ] as const)('%s', (text, secrets, expected) => {
    expect(redactSecrets(text, secrets)).toBe(expected);
  });

  it('collects every non-empty credential value', () => {
    expect(credentialSecrets({ connectionString: 'postgres://x', token: '', other: undefined })).toEqual(['postgres://x']);
  });
});

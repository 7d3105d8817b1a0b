/** The credentials and the budget they give, without a server. */
import { parseCredentials, rateRules } from './credentials';

const context = { egress: { allowPrivate: true, allowLoopback: true } };

describe('nocodb credentials', () => {
  it('keeps a path prefix and drops the trailing slash', () => {
    expect(parseCredentials({ baseUrl: 'https://example.com/nocodb/', apiToken: 't' }, context).baseUrl).toBe(
      'https://example.com/nocodb',
    );
  });

  it.each([
    ['https://app.nocodb.com', undefined, 5],
    ['https://nocodb.example.com', undefined, 20],
    ['https://nocodb.example.com', '50', 50],
  ])('budgets %s (setting %s) at %d requests/s, keyed by a hash', (baseUrl, setting, rate) => {
    const settings = parseCredentials(
      { baseUrl, apiToken: 'secret-token' },
      { ...context, settings: { NOCODB_REQUESTS_PER_SECOND: setting } },
    );
    const [rule] = rateRules(settings);
    expect(rule).toMatchObject({ ratePerSecond: rate, burst: 1 });
    expect(rule!.key).toMatch(/^nocodb:token:[0-9a-f]{32}$/);
    expect(rule!.key).not.toContain('secret-token');
  });
});

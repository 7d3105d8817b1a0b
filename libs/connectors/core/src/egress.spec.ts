import { assertHostAllowed, classifyAddress, DEFAULT_EGRESS_POLICY, type EgressPolicy } from './egress';
import { ConnectorError } from './errors';

const strict: EgressPolicy = { allowPrivate: false, allowLoopback: false };
const fakeDns: Record<string, string[]> = {
  'db.example.com': ['93.184.216.34'],
  'rebind.example.com': ['93.184.216.34', '169.254.169.254'],
  'internal.example.com': ['10.1.2.3'],
  'v6-metadata.example.com': ['fd00:ec2::254'],
  localhost: ['127.0.0.1', '::1'],
};
const lookup = async (host: string) => {
  const answer = fakeDns[host];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return answer;
};

describe('classifyAddress', () => {
  it.each([
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['169.254.0.1', 'link_local'],
    ['169.254.255.255', 'link_local'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['0.0.0.0', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['172.32.0.1', 'public'],
    ['172.15.255.255', 'public'],
    ['100.100.100.201', 'public'],
    ['8.8.8.8', 'public'],
    ['2001:4860:4860::8888', 'public'],
    ['fec0::1', 'public'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('throws for something that is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(TypeError);
  });
});

describe('assertHostAllowed', () => {
  it.each([
    // host, policy, outcome (addresses or the refused error kind)
    ['db.example.com', DEFAULT_EGRESS_POLICY, ['93.184.216.34']],
    ['db.example.com', strict, ['93.184.216.34']],
    ['DB.Example.COM.', strict, ['93.184.216.34']],
    ['8.8.8.8', strict, ['8.8.8.8']],
    ['127.0.0.1', DEFAULT_EGRESS_POLICY, ['127.0.0.1']],
    ['localhost', DEFAULT_EGRESS_POLICY, ['127.0.0.1', '::1']],
    ['10.1.2.3', DEFAULT_EGRESS_POLICY, ['10.1.2.3']],
    ['internal.example.com', DEFAULT_EGRESS_POLICY, ['10.1.2.3']],
    ['[::1]', DEFAULT_EGRESS_POLICY, ['::1']],
    ['/var/run/postgresql', DEFAULT_EGRESS_POLICY, ['/var/run/postgresql']],
    ['169.254.169.254', DEFAULT_EGRESS_POLICY, 'permission'],
    ['169.254.1.1', DEFAULT_EGRESS_POLICY, 'permission'],
    ['fe80::1', DEFAULT_EGRESS_POLICY, 'permission'],
    ['100.100.100.200', DEFAULT_EGRESS_POLICY, 'permission'],
    ['fd00:ec2::254', DEFAULT_EGRESS_POLICY, 'permission'],
    ['metadata.google.internal', DEFAULT_EGRESS_POLICY, 'permission'],
    ['metadata.google.internal.', DEFAULT_EGRESS_POLICY, 'permission'],
    ['rebind.example.com', DEFAULT_EGRESS_POLICY, 'permission'],
    ['v6-metadata.example.com', DEFAULT_EGRESS_POLICY, 'permission'],
    ['127.0.0.1', strict, 'permission'],
    ['localhost', strict, 'permission'],
    ['::1', strict, 'permission'],
    ['/var/run/postgresql', strict, 'permission'],
    ['10.1.2.3', strict, 'permission'],
    ['internal.example.com', strict, 'permission'],
    ['192.168.0.10', strict, 'permission'],
    ['fc00::1', strict, 'permission'],
    ['10.1.2.3', { allowPrivate: true, allowLoopback: false }, ['10.1.2.3']],
    ['127.0.0.1', { allowPrivate: false, allowLoopback: true }, ['127.0.0.1']],
    ['', DEFAULT_EGRESS_POLICY, 'permission'],
    ['no-such-host.example.com', DEFAULT_EGRESS_POLICY, 'transient'],
  ] as const)('%s with %j -> %j', async (host, policy, outcome) => {
    const attempt = assertHostAllowed(host, policy, { lookup });
    if (typeof outcome === 'string') {
      const error = await attempt.then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ConnectorError);
      expect(error).toMatchObject({ kind: outcome });
      if (outcome === 'permission')
        expect((error as ConnectorError).message).toMatch(/^Connection refused by egress policy: /);
    } else {
      await expect(attempt).resolves.toEqual(outcome);
    }
  });

  it('resolves real names with the system resolver', async () => {
    await expect(assertHostAllowed('localhost', DEFAULT_EGRESS_POLICY)).resolves.toEqual(
      expect.arrayContaining([expect.stringMatching(/^(127\.|::1$)/)]),
    );
    await expect(assertHostAllowed('localhost', strict)).rejects.toMatchObject({ kind: 'permission' });
  });
});

/**
 * Egress policy for connection targets (config: EGRESS_ALLOW_PRIVATE, EGRESS_ALLOW_LOOPBACK). Link-local and
 * cloud metadata addresses are always refused; private ranges and loopback are allowed by default for
 * self-hosting and can be refused.
 *
 * Every connector calls `assertHostAllowed()` before it opens a network connection, and connects to one of
 * the addresses it returns (not to the name again), so a DNS answer that changes between the check and the
 * connect cannot slip past the policy.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ConnectorError } from './errors';

export interface EgressPolicy {
  allowPrivate: boolean;
  allowLoopback: boolean;
}

export const DEFAULT_EGRESS_POLICY: EgressPolicy = Object.freeze({ allowPrivate: true, allowLoopback: true });

/** What an address is, for the egress policy. `metadata` and `link_local` are always refused. */
export type AddressClass = 'metadata' | 'link_local' | 'loopback' | 'private' | 'public';

/** Host names of cloud metadata services, refused before any lookup. */
export const METADATA_HOSTNAMES: readonly string[] = Object.freeze([
  'metadata.google.internal',
  'metadata.goog',
  'metadata',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.azure.internal',
]);

function blockList(entries: readonly (readonly [string, number | null, 'ipv4' | 'ipv6'])[]): BlockList {
  const list = new BlockList();
  for (const [address, prefix, family] of entries) {
    if (prefix === null) list.addAddress(address, family);
    else list.addSubnet(address, prefix, family);
  }
  return list;
}

// BlockList also matches IPv4-mapped IPv6 addresses (::ffff:169.254.169.254) against the IPv4 entries.
const METADATA = blockList([
  ['169.254.169.254', null, 'ipv4'],
  ['169.254.170.2', null, 'ipv4'], // AWS ECS task metadata
  ['100.100.100.200', null, 'ipv4'], // Alibaba Cloud
  ['fd00:ec2::254', null, 'ipv6'], // AWS IMDS over IPv6
]);
const LINK_LOCAL = blockList([
  ['169.254.0.0', 16, 'ipv4'],
  ['fe80::', 10, 'ipv6'],
]);
const LOOPBACK = blockList([
  ['127.0.0.0', 8, 'ipv4'],
  ['0.0.0.0', 8, 'ipv4'], // "this host": connecting to 0.0.0.0 reaches the local machine
  ['::1', null, 'ipv6'],
  ['::', null, 'ipv6'],
]);
const PRIVATE = blockList([
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['fc00::', 7, 'ipv6'],
]);

/** Classifies one IP address (v4 or v6). Throws a TypeError for something that is not an IP address. */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const version = isIP(bare);
  if (version === 0) throw new TypeError(`not an IP address: ${address}`);
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (METADATA.check(bare, family)) return 'metadata';
  if (LINK_LOCAL.check(bare, family)) return 'link_local';
  if (LOOPBACK.check(bare, family)) return 'loopback';
  if (PRIVATE.check(bare, family)) return 'private';
  return 'public';
}

function refusalReason(kind: AddressClass, policy: EgressPolicy): string | null {
  switch (kind) {
    case 'metadata':
      return 'a cloud metadata address';
    case 'link_local':
      return 'a link-local address';
    case 'loopback':
      return policy.allowLoopback
        ? null
        : 'a loopback address, and this server does not allow loopback targets';
    case 'private':
      return policy.allowPrivate
        ? null
        : 'a private network address, and this server does not allow private targets';
    case 'public':
      return null;
  }
}

export interface AssertHostOptions {
  /** Resolves a host name to every address (default: node:dns lookup with `all: true`). */
  lookup?: (host: string) => Promise<string[]>;
}

async function defaultLookup(host: string): Promise<string[]> {
  const answers = await dnsLookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/**
 * Resolves `host` and refuses it (ConnectorError kind `permission`) when any of its addresses is a cloud
 * metadata or link-local address, or a private / loopback address the policy does not allow. Returns the
 * resolved addresses (in resolver order) so the caller can connect to exactly what was checked.
 *
 * A host that does not resolve is ConnectorError kind `transient` (the app is unreachable).
 * A local socket path (starting with `/`) counts as loopback.
 */
export async function assertHostAllowed(
  host: string,
  policy: EgressPolicy,
  options: AssertHostOptions = {},
): Promise<string[]> {
  const name = host
    .trim()
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[|\]$/g, '');
  if (name === '')
    throw new ConnectorError('permission', 'Connection refused by egress policy: no host given');
  if (name.startsWith('/')) {
    if (!policy.allowLoopback) {
      throw new ConnectorError(
        'permission',
        'Connection refused by egress policy: local sockets are loopback targets, which this server ' +
          'does not allow',
      );
    }
    return [host];
  }
  if (METADATA_HOSTNAMES.includes(name)) {
    throw new ConnectorError(
      'permission',
      `Connection refused by egress policy: "${name}" is a cloud metadata service`,
    );
  }
  let addresses: string[];
  if (isIP(name) !== 0) {
    addresses = [name];
  } else {
    try {
      addresses = await (options.lookup ?? defaultLookup)(name);
    } catch {
      throw new ConnectorError('transient', `Could not resolve host "${name}"`, { appCode: 'ENOTFOUND' });
    }
    if (addresses.length === 0)
      throw new ConnectorError('transient', `Could not resolve host "${name}"`, { appCode: 'ENOTFOUND' });
  }
  for (const address of addresses) {
    const reason = refusalReason(classifyAddress(address), policy);
    if (reason !== null) {
      const via = address === name ? '' : ` (resolves to ${address})`;
      throw new ConnectorError(
        'permission',
        `Connection refused by egress policy: "${name}"${via} is ${reason}`,
        { appCode: 'EGRESS_REFUSED' },
      );
    }
  }
  return addresses;
}

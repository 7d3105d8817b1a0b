/**
 * One HTTP exchange over `node:http` / `node:https`, connected to an address the egress policy already
 * checked: the socket's DNS lookup is replaced by that address, so an answer that changes between the check
 * and the connect (DNS rebinding) cannot reach anything else. TLS still verifies the certificate against the
 * host name. The whole exchange has one deadline; the body is read up to a size limit.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';

export interface ExchangeRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** The checked address to connect to (one of `assertHostAllowed`'s answers). */
  address: string;
  timeoutMs: number;
  maxBodyBytes: number;
  signal?: AbortSignal;
}

export interface ExchangeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Keep-alive pools; a pooled socket is one that was connected to a checked address. */
const AGENTS = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: 16 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 16 }),
};

/** A lookup that answers every name with the checked address. */
function pinnedLookup(address: string): LookupFunction {
  const family = isIP(address) === 6 ? 6 : 4;
  return (_hostname, options, callback) => {
    if (options.all)
      (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/** An error carrying a network-style `code`, as Node's own errors do. */
export class ExchangeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function exchange(request: ExchangeRequest): Promise<ExchangeResponse> {
  const { url } = request;
  const secure = url.protocol === 'https:';
  const module = secure ? https : http;
  return new Promise((resolve, reject) => {
    const req = module.request({
      protocol: url.protocol,
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: {
        ...request.headers,
        ...(request.body ? { 'content-length': String(request.body.length) } : {}),
      },
      agent: AGENTS[secure ? 'https:' : 'http:'],
      lookup: pinnedLookup(request.address),
      signal: request.signal,
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      outcome();
    };
    const fail = (error: Error) => settle(() => reject(error));
    /** Ends the exchange with `error` and drops the socket; later events of either side are ignored. */
    const abandon = (error: ExchangeError) => {
      fail(error);
      req.destroy();
    };
    const deadline = setTimeout(
      () => abandon(new ExchangeError('ETIMEDOUT', `no answer within ${request.timeoutMs} ms`)),
      request.timeoutMs,
    );
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > request.maxBodyBytes) {
          abandon(
            new ExchangeError(
              'RESPONSE_TOO_LARGE',
              `the answer is larger than ${request.maxBodyBytes} bytes`,
            ),
          );
          res.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', fail);
      res.on('close', () => {
        if (!res.complete)
          fail(new ExchangeError('ECONNRESET', 'the connection closed before the answer was complete'));
      });
      res.on('end', () => {
        settle(() =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      });
    });
    req.end(request.body);
  });
}

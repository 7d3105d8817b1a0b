/** A real HTTP server on 127.0.0.1 for the client's tests; it records every request it receives. */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';

export interface Arrival {
  at: number;
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, arrival: Arrival) => void;

export interface Loopback {
  url: string;
  port: number;
  arrivals: Arrival[];
  close(): Promise<void>;
}

export async function startLoopback(handler: Handler): Promise<Loopback> {
  const arrivals: Arrival[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const arrival = {
        at: Date.now(),
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      arrivals.push(arrival);
      handler(req, res, arrival);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A new Redis connection (each one stands for a worker process) and a key prefix no other test uses. */
export function redisConnection(): Redis {
  return new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
}

export function uniquePrefix(): string {
  return `lockstep-test:http:${randomUUID()}`;
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
}

/** The most arrivals inside any window of `windowMs`. */
export function busiestWindow(arrivals: readonly { at: number }[], windowMs: number): number {
  const times = arrivals.map((arrival) => arrival.at).sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < times.length; end += 1) {
    while (times[end]! - times[start]! >= windowMs) start += 1;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

/**
 * A stand-in for Lockstep's notification endpoint for the connector's specs and its benchmark (the API's `AppHooksController` is
 * tested end to end in apps/api): a loopback HTTP server that checks the signature NocoDB's webhook sends and
 * publishes the call on the channel's signals, as the endpoint does. It counts the calls.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChangeSignals } from '@lockstep/connectors-core';
import {
  HOOK_SIGNATURE_HEADER,
  hookHints,
  hookSignalChannel,
  hookSignature,
} from '@lockstep/connectors-http';

export interface Receiver {
  url: string;
  calls: { channel: string; body: unknown; signed: boolean }[];
  close(): Promise<void>;
}

export async function startReceiver(signals: ChangeSignals, key: string): Promise<Receiver> {
  const calls: Receiver['calls'] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const channel = /^\/hooks\/nocodb\/([^/?]+)$/.exec(request.url ?? '')?.[1] ?? '';
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = null;
      }
      const signed = request.headers[HOOK_SIGNATURE_HEADER] === hookSignature(key, channel);
      calls.push({ channel, body, signed });
      if (!signed) {
        response.writeHead(403).end();
        return;
      }
      void signals.publish(hookSignalChannel('nocodb', channel), hookHints(body)).then(() => {
        response.writeHead(204).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A loopback proxy in front of the real NocoDB for the specs that need NocoDB to misbehave: it answers 429
 * (with `Retry-After`) to the requests `refuse` picks, can stop answering (a server gone), and counts what it
 * forwarded. Everything else goes to NocoDB unchanged.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Proxy {
  url: string;
  stats: { forwarded: number; refused: number; byMethod: Record<string, number> };
  /** Called for each request (method, path); true answers 429 instead of forwarding. */
  refuse: (method: string, path: string) => boolean;
  /** While true, requests get no answer and their connection is cut (NocoDB down). */
  down: boolean;
  /** Called for each forwarded request; true lets NocoDB act but cuts the connection before its answer. */
  dropAnswer: (method: string, path: string) => boolean;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  const proxy: Proxy = {
    url: '',
    stats: { forwarded: 0, refused: 0, byMethod: {} },
    refuse: () => false,
    down: false,
    dropAnswer: () => false,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    if (proxy.down) {
      req.socket.destroy();
      return;
    }
    const method = req.method ?? 'GET';
    if (proxy.refuse(method, req.url ?? '')) {
      proxy.stats.refused += 1;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(JSON.stringify({ msg: 'ThrottlerException: Too Many Requests' }));
      return;
    }
    proxy.stats.forwarded += 1;
    proxy.stats.byMethod[method] = (proxy.stats.byMethod[method] ?? 0) + 1;
    const drop = proxy.dropAnswer(method, req.url ?? '');
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method, path: req.url, headers: req.headers },
      (answer) => {
        if (drop) {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

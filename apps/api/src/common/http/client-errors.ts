import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppConfig } from '@lockstep/config';
import { DomainError, ErrorCode } from '@lockstep/contracts';
import { errorBody } from '../errors/error.filter';

/**
 * Requests Node's HTTP parser refuses before the app sees them (a request line and headers over its size
 * limit, malformed HTTP) are answered `400 invalid_request` in the spec's error shape, not with Node's bare
 * 431 or 400. The connection is closed after the answer: the parser cannot find where the next request
 * starts.
 */
export function answerClientErrors(server: Server, config: AppConfig): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request line and headers are larger than the server accepts (16 KB): send long input in ' +
          'a JSON body.'
        : 'The request is not well-formed HTTP.';
    const body = JSON.stringify(errorBody(config, new DomainError(ErrorCode.InvalidRequest, message)));
    const head = [
      'HTTP/1.1 400 Bad Request',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}

import { routeNotFoundMessage } from './route-hint';

/** A few documented paths, relative to /v1 as in the OpenAPI description. */
const PATHS = {
  '/sync/syncs': { get: {}, post: {} },
  '/sync/syncs/{id}': { get: {}, patch: {}, delete: {} },
  '/sync/syncs/{sync_id}/validate': { post: {} },
  '/sync/connectors': { get: {} },
  '/live-export/live-exports': { get: {}, post: {} },
};

describe('routeNotFoundMessage', () => {
  it.each([
    ['GET', '/v1/syncs', 'No such endpoint: GET /v1/syncs. Did you mean GET /v1/sync/syncs?'],
    [
      'DELETE',
      '/v1/syncs/sync_1',
      'No such endpoint: DELETE /v1/syncs/sync_1. Did you mean DELETE /v1/sync/syncs/sync_1?',
    ],
    [
      'PUT',
      '/v1/syncs/sync_1',
      'No such endpoint: PUT /v1/syncs/sync_1. Did you mean GET, PATCH, DELETE /v1/sync/syncs/sync_1?',
    ],
    [
      'GET',
      '/v1/connectors/?limit=2',
      'No such endpoint: GET /v1/connectors. Did you mean GET /v1/sync/connectors?',
    ],
    [
      'POST',
      '/v1/live-exports',
      'No such endpoint: POST /v1/live-exports. Did you mean POST /v1/live-export/live-exports?',
    ],
    ['GET', '/sync/syncs', 'No such endpoint: GET /sync/syncs. Did you mean GET /v1/sync/syncs?'],
    ['GET', '/syncs', 'No such endpoint: GET /syncs. Did you mean GET /v1/sync/syncs?'],
  ])('%s %s names the endpoint meant', (method, url, start) => {
    expect(routeNotFoundMessage(method, url, PATHS)).toBe(
      `${start} Paths are relative to /v1; sync endpoints are under /v1/sync/ and live export endpoints under /v1/live-export/.`,
    );
  });

  it.each([
    [
      'GET',
      '/v1/sync/syncs/sync_1/validate',
      'No such endpoint: GET /v1/sync/syncs/sync_1/validate. /v1/sync/syncs/sync_1/validate takes POST.',
    ],
    ['PUT', '/v1/sync/syncs', 'No such endpoint: PUT /v1/sync/syncs. /v1/sync/syncs takes GET, POST.'],
    ['GET', '/v1/nothing', 'No such endpoint: GET /v1/nothing.'],
    ['GET', '/v1', 'No such endpoint: GET /v1.'],
    ['GET', `/v1/${'x'.repeat(300)}`, `No such endpoint: GET /v1/${'x'.repeat(196)}....`],
  ])('%s %s', (method, url, message) => {
    expect(routeNotFoundMessage(method, url, PATHS)).toBe(message);
  });
});

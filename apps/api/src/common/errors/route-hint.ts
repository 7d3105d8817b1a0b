/** The methods an OpenAPI path item may hold, in the order a hint names them. */
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Each feature's prefix under `/v1` (spec section 1): the segment a caller most often leaves out. */
const FEATURE_PREFIXES = ['/sync', '/live-export'];

/** A documented path (relative to `/v1`, as in the OpenAPI description) and the methods it serves. */
interface Route {
  pattern: RegExp;
  methods: string[];
}

const compiled = new WeakMap<object, Route[]>();

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function routesOf(paths: Record<string, object>): Route[] {
  let routes = compiled.get(paths);
  if (!routes) {
    routes = Object.entries(paths).map(([template, item]) => ({
      pattern: new RegExp(
        `^${template
          .split(/\{[^}]+\}/)
          .map(escape)
          .join('[^/]+')}$`,
      ),
      methods: METHODS.filter((method) => method in item).map((method) => method.toUpperCase()),
    }));
    compiled.set(paths, routes);
  }
  return routes;
}

function methodsAt(routes: Route[], path: string): string[] {
  return routes.find((route) => route.pattern.test(path))?.methods ?? [];
}

/**
 * The message of a 404 for a request no route serves, naming the documented endpoint the caller most likely
 * meant: the same path with the method it takes, the path under a feature prefix (`/v1/syncs` for
 * `/v1/sync/syncs`) or under `/v1`. `paths` are the OpenAPI description's paths, relative to `/v1`.
 */
export function routeNotFoundMessage(method: string, url: string, paths: Record<string, object>): string {
  const path = url.split('?')[0]!.replace(/(.)\/+$/, '$1');
  const routes = routesOf(paths);
  const unknown = `No such endpoint: ${method} ${path.length > 200 ? `${path.slice(0, 200)}...` : path}.`;
  const versioned = path === '/v1' || path.startsWith('/v1/');
  const rest = versioned ? path.slice(3) : path;
  const here = versioned ? methodsAt(routes, rest) : [];
  if (here.length > 0 && !here.includes(method)) return `${unknown} ${path} takes ${here.join(', ')}.`;
  for (const candidate of [
    ...FEATURE_PREFIXES.map((prefix) => prefix + rest),
    ...(versioned ? [] : [rest]),
  ]) {
    const methods = methodsAt(routes, candidate);
    if (methods.length === 0) continue;
    const shown = methods.includes(method) ? method : methods.join(', ');
    return (
      `${unknown} Did you mean ${shown} /v1${candidate}? Paths are relative to /v1; sync endpoints are ` +
      `under /v1/sync/ and live export endpoints under /v1/live-export/.`
    );
  }
  return unknown;
}

/**
 * Checks every request's parsed input before routing: the body is at most `INPUT_LIMITS.jsonDepth` levels
 * deep and no text anywhere (body keys and values, query parameters, path) holds a NUL character.
 *
 * Invariants: deep input never reaches a recursive consumer (class-transformer, the validator, loggers), so
 * the walk here is iterative; NUL is refused at the edge because neither the store (PostgreSQL text and
 * jsonb) nor the connected apps can hold it, whichever field it is in.
 */
import { DomainError, ErrorCode, INPUT_LIMITS } from '@lockstep/contracts';

export interface InputProblem {
  in: 'body' | 'query' | 'path';
  path: string;
  message: string;
}

const NUL = '\u0000';

function pathOf(parent: string, key: string | number): string {
  return parent === '' ? String(key) : `${parent}.${key}`;
}

/** The first problem in a parsed JSON value (or a parsed query object), or null; never recursive. */
export function findInputProblem(root: unknown, where: 'body' | 'query'): InputProblem | null {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop() as { value: unknown; path: string; depth: number };
    if (typeof value === 'string') {
      if (value.includes(NUL))
        return { in: where, path, message: `${path || where} must not contain a NUL character` };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= INPUT_LIMITS.jsonDepth) {
      return { in: where, path, message: `The ${where} nests deeper than ${INPUT_LIMITS.jsonDepth} levels` };
    }
    for (const [key, child] of Object.entries(value)) {
      const childPath = pathOf(path, Array.isArray(value) ? Number(key) : key);
      if (key.includes(NUL))
        return { in: where, path: childPath, message: 'A property name must not contain a NUL character' };
      stack.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return null;
}

/** A percent-encoded NUL in the path would reach a service as part of an id. */
function pathProblem(rawPath: string): InputProblem | null {
  return /%00/.test(rawPath)
    ? { in: 'path', path: rawPath.slice(0, 200), message: 'The path must not contain a NUL character' }
    : null;
}

/** Throws `400 invalid_request` naming the first problem of the request's path, query and body. */
export function assertCleanInput(request: { path: string; query: unknown; body: unknown }): void {
  const problem =
    pathProblem(request.path) ??
    findInputProblem(request.query, 'query') ??
    findInputProblem(request.body, 'body');
  if (problem) throw new DomainError(ErrorCode.InvalidRequest, `${problem.message}.`, { errors: [problem] });
}

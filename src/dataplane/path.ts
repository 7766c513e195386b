// Data paths: validation, /runs/self resolution and prefix authorization (seed 004 §5.1, N6-N8).
// Pure functions, no I/O: the authority calls them, in this order, once per open (validate, resolve,
// authorize), and the node lane tests them directly.
import { dpError } from './errors.js';

/** The alias a session uses for its own run directory; resolved once per open (N6). */
export const RUNS_SELF = '/runs/self';
/** Longest accepted path, in UTF-16 code units (keeps namespace keys bounded). */
export const MAX_PATH_LENGTH = 1024;
/** Run ids are one plain segment. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function invalid(op: string, reason: string, path?: unknown): never {
  throw dpError('EINVAL', op, `invalid path (${reason})`, { reason, ...(typeof path === 'string' && path.length <= MAX_PATH_LENGTH ? { path } : {}) });
}

/**
 * Checks the spelling of a path: absolute, not the root, no empty / `.` / `..` segments, no trailing
 * slash, no NUL or other control characters, at most MAX_PATH_LENGTH long. Returns it unchanged.
 */
export function validatePath(path: unknown, op = 'path.validate'): string {
  if (typeof path !== 'string') invalid(op, 'not-a-string');
  if (path.length === 0) invalid(op, 'empty', path);
  if (path.length > MAX_PATH_LENGTH) invalid(op, 'too-long');
  if (path[0] !== '/') invalid(op, 'relative', path);
  if (path === '/') invalid(op, 'root', path);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) invalid(op, 'control-character', path.replace(/[\u0000-\u001f\u007f]/g, '?'));
  const segments = path.slice(1).split('/');
  for (const s of segments) {
    if (s === '') invalid(op, 'empty-segment', path);
    if (s === '.' || s === '..') invalid(op, 'dot-segment', path);
  }
  return path;
}

export function validateRunId(runId: unknown, op = 'session.attach'): string {
  if (typeof runId !== 'string' || !RUN_ID.test(runId) || runId === 'self') {
    throw dpError('EINVAL', op, 'run id must be one plain path segment other than "self"', { reason: 'bad-run-id' });
  }
  return runId;
}

/** Expands a leading /runs/self to /runs/<runId>; any other path is returned as is (N6). */
export function resolvePath(path: string, runId: string): string {
  if (path === RUNS_SELF) return `/runs/${runId}`;
  if (path.startsWith(`${RUNS_SELF}/`)) return `/runs/${runId}${path.slice(RUNS_SELF.length)}`;
  return path;
}

/** A prefix covers itself and everything below it, on segment boundaries ('/' covers every path). */
export function isUnder(path: string, prefix: string): boolean {
  if (prefix === '/') return true;
  return path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47 /* '/' */);
}

/** Validates and resolves a session's read or write prefix ('/' is allowed and means everything). */
export function resolvePrefix(prefix: unknown, runId: string, op = 'session.attach'): string {
  if (prefix === '/') return '/';
  return resolvePath(validatePath(prefix, op), runId);
}

/** Rights a session holds, as resolved prefixes. */
export interface ResolvedAccess {
  readonly runId: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
}

/** True when the resolved path may be opened with the requested rights (N7: resolved path only). */
export function authorized(access: ResolvedAccess, resolved: string, wantRead: boolean, wantWrite: boolean): boolean {
  if (wantRead && !access.read.some((p) => isUnder(resolved, p))) return false;
  if (wantWrite && !access.write.some((p) => isUnder(resolved, p))) return false;
  return true;
}

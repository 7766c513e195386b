// Data-plane error construction. Every failure leaves as a TenonError with a stable `code` (seed 004
// §12, E1) plus the operation, an optional stable `reason` and the resolved path; message text is for
// people only (E3).
import { TenonError } from '../errors.js';
import type { TenonErrorCode } from '../errors.js';

export interface DataPlaneErrorFields {
  readonly reason?: string;
  readonly path?: string;
  readonly ids?: Readonly<Record<string, string | number>>;
  readonly cause?: unknown;
}

export function dpError(code: TenonErrorCode, op: string, message: string, fields: DataPlaneErrorFields = {}): TenonError {
  return new TenonError(code, message, { op, ...fields });
}

/**
 * Turns anything thrown by a platform API (OPFS, IndexedDB, Web Locks) into a TenonError (E5): quota
 * errors become ENOSPC, a missing file ENOENT, a lock or state conflict EBUSY, anything else EIO.
 */
export function fromPlatform(err: unknown, op: string, path?: string): TenonError {
  if (err instanceof TenonError) return err;
  const name = typeof err === 'object' && err !== null && 'name' in err ? String((err as { name: unknown }).name) : '';
  const code: TenonErrorCode =
    name === 'QuotaExceededError' ? 'ENOSPC' : name === 'NotFoundError' ? 'ENOENT' : name === 'NoModificationAllowedError' || name === 'InvalidStateError' ? 'EBUSY' : 'EIO';
  return dpError(code, op, `platform error ${name || String(err)}`, { reason: `platform-${name || 'unknown'}`, ...(path === undefined ? {} : { path }), cause: err });
}

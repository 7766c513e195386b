// TenonError: the one error type every layer throws (STYLE.md 6).
//
// Contract: `code` is stable and is what callers and tests branch on; `reason` is an optional stable
// sub-code (kebab-case or a seed name such as `NotProvablyDisjoint`) that narrows the code; `message` is
// for people and may change. Structured fields carry the operation, ids and byte ranges that explain the
// failure; they never carry raw addresses or host pointers. Throwing a TenonError never changes the state
// of the object the operation was called on (each layer guarantees that separately and tests it).

/** Every stable code, kernel and data plane together (DESIGN.md "Errors"). */
export const ERROR_CODES = [
  // kernel (src/storage, src/submit)
  'EINVAL', // malformed argument or layout
  'EBUSY', // a conflicting borrow is alive
  'EMOVED', // the value was consumed by an earlier call
  'ERELEASED', // the borrow or prepared access was already released
  'ENOTSUP', // the provider or build does not offer this mode
  'ENOMEM', // the provider could not allocate
  'EOVERFLOW', // exact integer arithmetic left the safe range
  'ENODEV', // the device is lost
  // data plane (src/dataplane)
  'ENOENT',
  'EEXIST',
  'EACCES',
  'EBADF',
  'ENXIO',
  'ENOSPC',
  'EAGAIN',
  'ECANCELED',
  'EPIPE',
  'ECONNRESET',
  'EIO',
  'ESTALE',
] as const;

export type TenonErrorCode = (typeof ERROR_CODES)[number];

/** A half-open byte range [start, end) relative to the named root or file. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export interface TenonErrorFields {
  /** The public operation that failed, e.g. `tensor.viewMut` or `group.splitMut`. */
  readonly op: string;
  /** A stable refinement of `code`. */
  readonly reason?: string;
  /** Identifiers that locate the failure: root ids, slot numbers, provider ids, paths. */
  readonly ids?: Readonly<Record<string, string | number>>;
  /** The byte range involved, when there is one. */
  readonly range?: ByteRange;
  /** The resolved path, for data-plane errors. */
  readonly path?: string;
  /** The underlying platform error, if one caused this. */
  readonly cause?: unknown;
}

export class TenonError extends Error {
  readonly code: TenonErrorCode;
  readonly op: string;
  readonly reason: string | undefined;
  readonly ids: Readonly<Record<string, string | number>> | undefined;
  readonly range: ByteRange | undefined;
  readonly path: string | undefined;

  constructor(code: TenonErrorCode, message: string, fields: TenonErrorFields) {
    super(`${code}: ${fields.op}: ${message}`, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = 'TenonError';
    this.code = code;
    this.op = fields.op;
    this.reason = fields.reason;
    this.ids = fields.ids;
    this.range = fields.range;
    this.path = fields.path;
  }
}

/** True when `err` is a TenonError, optionally with the given code. */
export function isTenonError(err: unknown, code?: TenonErrorCode): err is TenonError {
  return err instanceof TenonError && (code === undefined || err.code === code);
}

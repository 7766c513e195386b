// Messages between a session (any context) and the namespace authority, over one MessagePort.
// Type-only. The authority answers every request id exactly once (A1) with grant+ready, ok, error or
// cancelled; grants carry only control facts (file names, ring buffers, ids) and never payload bytes
// (PF2, K8). Tokens are random and valid only for the session they were issued to (K1-K3).
import type { AccessMode, Capability, NodeInfo, ObjectKind, DataPlaneSessionFaults } from './types.js';
import type { TenonErrorCode } from '../errors.js';

export interface OpenMessage {
  readonly t: 'open';
  readonly id: number;
  readonly path: string;
  readonly access: AccessMode;
  readonly create: boolean;
  readonly exclusive: boolean;
  readonly truncate: boolean;
  readonly nonblocking: boolean;
  readonly allocation?: { readonly length: number; readonly digest?: string };
  readonly kind?: ObjectKind;
  readonly opId?: string;
}

export type ClientMessage =
  /** The session holds its liveness lock and is ready to run. */
  | { readonly t: 'hello' }
  | OpenMessage
  /** Withdraw a pending open; answered with `cancelled` (or the grant that already left). */
  | { readonly t: 'cancel'; readonly id: number }
  /** The stream endpoint validated its ring and holds its endpoint lock. */
  | { readonly t: 'attached'; readonly id: number; readonly token: string }
  /** The client refuses a grant (late, cancelled or failed to attach); the authority reclaims it. */
  | { readonly t: 'reject'; readonly token: string; readonly code: TenonErrorCode }
  /** Clean close of a staged blob: publish it. */
  | { readonly t: 'publish'; readonly id: number; readonly token: string; readonly digest?: string }
  /** End of a grant: reader close, staged abort, stream close or abort. */
  | { readonly t: 'release'; readonly id: number; readonly token: string; readonly how: 'close' | 'abort' }
  | { readonly t: 'ensure-stream'; readonly id: number; readonly path: string; readonly capacity?: number; readonly opId?: string }
  | { readonly t: 'replace-stream'; readonly id: number; readonly path: string; readonly opId?: string }
  | { readonly t: 'stat'; readonly id: number; readonly path: string }
  | { readonly t: 'bye'; readonly id: number };

export interface BlobGrant {
  readonly file: string;
  readonly length: number;
  /** Published revision read by this grant; the staged one has none yet. */
  readonly revision?: number;
  readonly staged: boolean;
  readonly digest?: string;
}

export interface StreamGrant {
  readonly ring: SharedArrayBuffer;
  readonly role: 'reader' | 'writer';
  readonly incarnation: number;
  readonly generation: number;
  /** Web Lock the endpoint holds while attached; the authority waits on it to see the endpoint vanish. */
  readonly lock: string;
}

export interface GrantWire {
  readonly token: string;
  readonly kind: ObjectKind;
  readonly access: AccessMode;
  readonly path: string;
  readonly capabilities: readonly Capability[];
  readonly blob?: BlobGrant;
  readonly stream?: StreamGrant;
}

export type AuthorityMessage =
  | {
      readonly t: 'welcome';
      readonly plane: string;
      readonly sessionId: string;
      readonly runId: string;
      readonly read: readonly string[];
      readonly write: readonly string[];
      readonly faults: DataPlaneSessionFaults;
      /** Lock the session holds while alive. */
      readonly sessionLock: string;
      /** Lock the authority holds while alive. */
      readonly authorityLock: string;
    }
  | { readonly t: 'running' }
  | { readonly t: 'grant'; readonly id: number; readonly grant: GrantWire }
  | { readonly t: 'ready'; readonly id: number }
  | { readonly t: 'ok'; readonly id: number; readonly value?: OkValue }
  | { readonly t: 'error'; readonly id: number; readonly code: TenonErrorCode; readonly reason?: string; readonly path?: string; readonly message: string }
  | { readonly t: 'cancelled'; readonly id: number }
  /** The authority ended the session (explicit close or teardown); `fault` says why when it was a failure. */
  | { readonly t: 'teardown'; readonly fault?: { readonly code: TenonErrorCode; readonly reason: string } };

export type OkValue =
  | { readonly revision: number }
  | { readonly incarnation: number }
  | { readonly node: NodeInfo }
  | { readonly created: boolean };

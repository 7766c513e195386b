// Sessions: the client half of the data plane, in any context (page or worker). A session is attached
// over one MessagePort to the authority with fixed read/write prefixes; it opens descriptors and runs
// their data paths locally (OPFS handles, ring endpoints), talking to the authority only at open, at
// namespace control and at terminal steps.
//
// Liveness: while attached the session holds a Web Lock the authority watches (context death means
// teardown: D6) and watches the authority's lock (authority death ends the session here: C8). If either
// watch is refused by Web Locks, the session ends with EIO `lock-watch-failed` (its `fault`), which every
// later call reports: a session whose liveness nobody can see does not keep running silently.
// Correlation: every request carries a fresh id; a reply is matched by id only, and a grant for an id
// that is no longer waiting (cancelled, failed, unknown) is refused and reclaimed (O2, OP6, C4, A2).
import { TenonError } from '../errors.js';
import { dpError } from './errors.js';
import { openBlobIO } from './blobio.js';
import { Core, newDescriptor } from './descriptor.js';
import type { Descriptor, SessionLink } from './descriptor.js';
import { holdLock, inDedicatedWorker, lockName, refusedLockName, watchLock } from './opfs.js';
import { RingReader, RingWriter } from './ring.js';
import type { AuthorityMessage, ClientMessage, GrantWire, OkValue } from './protocol.js';
import type { NodeInfo, OpenOptions } from './types.js';

export interface Session {
  /** The run `/runs/self` resolves to in this session (N6). */
  readonly runId: string;
  readonly state: 'running' | 'closing' | 'closed';
  /** Why the session ended, when a failure ended it (e.g. EIO `lock-watch-failed`); later calls throw it. */
  readonly fault: TenonError | undefined;
  open(path: string, options?: OpenOptions): Promise<Descriptor>;
  /** mkfifo: makes `path` a stream node (no-op when it already is one). Returns true when it created it. */
  ensureStream(path: string, options?: { readonly capacity?: number; readonly opId?: string }): Promise<boolean>;
  /** Starts a fresh incarnation of a stream; descriptors of the old one fail with ESTALE. */
  replaceStream(path: string, options?: { readonly opId?: string }): Promise<number>;
  stat(path: string): Promise<NodeInfo>;
  /** Ends every descriptor of the session and detaches it (idempotent). */
  close(): Promise<void>;
}

interface PendingCall {
  readonly kind: 'call';
  resolve(v: OkValue | undefined): void;
  reject(e: unknown): void;
}

interface PendingOpen {
  readonly kind: 'open';
  readonly id: number;
  resolve(d: Descriptor): void;
  reject(e: unknown): void;
  readonly signal: AbortSignal | undefined;
  onAbort?: () => void;
  stage: 'waiting' | 'attaching' | 'done';
  cancelRequested: boolean;
  /** Stream grant being attached: token and lock release, so cancellation can undo it. */
  attaching?: { token: string; release?: () => void };
  onReady?: () => void;
}

type Pending = PendingCall | PendingOpen;

/** The session's fault, restated for the operation that runs into it. */
const faultFor = (fault: TenonError, op: string): TenonError => dpError(fault.code, op, 'the session ended after a failure', { ...(fault.reason === undefined ? {} : { reason: fault.reason }), cause: fault });

const fromWire = (m: Extract<AuthorityMessage, { t: 'error' }>): TenonError =>
  dpError(m.code, 'dataplane', m.message, { ...(m.reason === undefined ? {} : { reason: m.reason }), ...(m.path === undefined ? {} : { path: m.path }) });

class SessionClient implements Session, SessionLink {
  readonly plane: string;
  readonly runId: string;
  state: 'running' | 'closing' | 'closed' = 'running';
  readonly #port: MessagePort;
  readonly #pending = new Map<number, Pending>();
  readonly #cores = new Set<Core>();
  readonly #watch = new AbortController();
  readonly #worker = inDedicatedWorker();
  #nextId = 1;
  #quota: number;
  #releaseLock: (() => void) | undefined;
  #closing: Promise<void> | undefined;
  #fault: TenonError | undefined;

  constructor(port: MessagePort, welcome: Extract<AuthorityMessage, { t: 'welcome' }>, releaseLock: () => void) {
    this.#port = port;
    this.plane = welcome.plane;
    this.runId = welcome.runId;
    this.#quota = welcome.faults.quotaBytes ?? Number.POSITIVE_INFINITY;
    this.#releaseLock = releaseLock;
    port.onmessage = (e: MessageEvent) => this.#onMessage(e.data as AuthorityMessage);
    const watched = welcome.faults.failAuthorityWatch === true ? refusedLockName(welcome.authorityLock) : welcome.authorityLock;
    watchLock(watched, this.#watch.signal, () => this.#authorityGone(), (err) => this.#authorityWatchFailed(err));
  }

  get fault(): TenonError | undefined {
    return this.#fault;
  }

  get running(): boolean {
    return this.state === 'running';
  }

  // ---------------------------------------------------------------------------------------------------
  // SessionLink

  takeQuota(n: number, op: string, allOrNothing: boolean): number {
    if (n === 0) return 0;
    const allowed = Math.min(n, this.#quota);
    if (allowed === 0 || (allOrNothing && allowed < n)) throw dpError('ENOSPC', op, 'storage quota exhausted', { reason: 'quota' });
    this.#quota -= allowed;
    return allowed;
  }

  call(build: (id: number) => ClientMessage): Promise<OkValue | undefined> {
    if (this.state === 'closed') return Promise.reject(this.#fault !== undefined ? faultFor(this.#fault, 'dataplane') : dpError('EBADF', 'dataplane', 'the session is closed', { reason: 'session-closed' }));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { kind: 'call', resolve, reject });
      this.#port.postMessage(build(id));
    });
  }

  forget(core: Core): void {
    this.#cores.delete(core);
  }

  // ---------------------------------------------------------------------------------------------------
  // public API

  #checkRunning(op: string): void {
    if (this.state === 'running') return;
    throw this.#fault !== undefined ? faultFor(this.#fault, op) : dpError('EBADF', op, 'the session is not running', { reason: 'session-closed' });
  }

  async open(path: string, options: OpenOptions = {}): Promise<Descriptor> {
    const op = 'dataplane.open';
    this.#checkRunning(op);
    if (typeof options !== 'object' || options === null) throw dpError('EINVAL', op, 'options must be an object', { reason: 'bad-options' });
    const signal = options.signal;
    if (signal?.aborted) throw dpError('ECANCELED', op, 'cancelled before it started', { reason: 'aborted' });
    const id = this.#nextId++;
    const msg: ClientMessage = {
      t: 'open',
      id,
      path,
      access: options.access ?? 'read',
      create: options.create === true,
      exclusive: options.exclusive === true,
      truncate: options.truncate === true,
      nonblocking: options.nonblocking === true,
      ...(options.allocation === undefined ? {} : { allocation: { length: options.allocation.length, ...(options.allocation.digest === undefined ? {} : { digest: options.allocation.digest }) } }),
      ...(options.kind === undefined ? {} : { kind: options.kind }),
      ...(options.opId === undefined ? {} : { opId: options.opId }),
    };
    return new Promise<Descriptor>((resolve, reject) => {
      const p: PendingOpen = { kind: 'open', id, resolve, reject, signal, stage: 'waiting', cancelRequested: false };
      if (signal !== undefined) {
        p.onAbort = () => this.#cancelOpen(p);
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.#pending.set(id, p);
      this.#port.postMessage(msg);
    });
  }

  async ensureStream(path: string, options: { readonly capacity?: number; readonly opId?: string } = {}): Promise<boolean> {
    this.#checkRunning('dataplane.ensureStream');
    const v = await this.call((id) => ({ t: 'ensure-stream', id, path, ...(options.capacity === undefined ? {} : { capacity: options.capacity }), ...(options.opId === undefined ? {} : { opId: options.opId }) }));
    return v !== undefined && 'created' in v ? v.created : false;
  }

  async replaceStream(path: string, options: { readonly opId?: string } = {}): Promise<number> {
    this.#checkRunning('dataplane.replaceStream');
    const v = await this.call((id) => ({ t: 'replace-stream', id, path, ...(options.opId === undefined ? {} : { opId: options.opId }) }));
    return v !== undefined && 'incarnation' in v ? v.incarnation : 0;
  }

  async stat(path: string): Promise<NodeInfo> {
    this.#checkRunning('dataplane.stat');
    const v = await this.call((id) => ({ t: 'stat', id, path }));
    if (v === undefined || !('node' in v)) throw dpError('EIO', 'dataplane.stat', 'malformed reply', { reason: 'protocol' });
    return v.node;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closing';
    const fault = this.#fault;
    this.#failPending(fault !== undefined ? faultFor(fault, 'dataplane.open') : dpError('ECANCELED', 'dataplane.open', 'the session is closing', { reason: 'session-closed' }), 'open');
    // Local handles go first so the authority can delete staging files once it tears down its side.
    for (const core of [...this.#cores]) await core.terminate(fault);
    this.#cores.clear();
    try {
      const id = this.#nextId++;
      await new Promise<void>((resolve, reject) => {
        this.#pending.set(id, { kind: 'call', resolve: () => resolve(), reject });
        this.#port.postMessage({ t: 'bye', id } satisfies ClientMessage);
      });
    } catch {
      // The authority is already gone: nothing left to detach from.
    }
    this.#finish();
  }

  #finish(): void {
    this.state = 'closed';
    this.#watch.abort();
    this.#releaseLock?.();
    this.#releaseLock = undefined;
    this.#port.close();
  }

  #failPending(err: TenonError, only?: 'open'): void {
    for (const [id, p] of [...this.#pending]) {
      if (only !== undefined && p.kind !== only) continue;
      this.#pending.delete(id);
      if (p.kind === 'open') this.#settleOpen(p);
      p.reject(err);
    }
  }

  /** The authority's lock became free: it is gone. Local data paths keep working; control does not (C8). */
  #authorityGone(): void {
    if (this.state === 'closed') return;
    this.#failPending(dpError('EIO', 'dataplane', 'the data plane authority went away', { reason: 'authority-gone' }));
    this.#finish();
  }

  /** Web Locks refused the watch of the authority: its death would go unseen, so the session ends now. */
  #authorityWatchFailed(err: TenonError): void {
    if (this.state !== 'running') return;
    this.#fault = err;
    void this.close();
  }

  // ---------------------------------------------------------------------------------------------------
  // replies

  #onMessage(m: AuthorityMessage): void {
    switch (m.t) {
      case 'grant':
        return this.#onGrant(m.id, m.grant);
      case 'ready': {
        const p = this.#pending.get(m.id);
        if (p?.kind === 'open' && p.stage === 'attaching') p.onReady?.();
        return;
      }
      case 'ok': {
        const p = this.#pending.get(m.id);
        if (p?.kind !== 'call') return;
        this.#pending.delete(m.id);
        p.resolve(m.value);
        return;
      }
      case 'error': {
        const p = this.#pending.get(m.id);
        if (p === undefined) return;
        this.#pending.delete(m.id);
        if (p.kind === 'open') this.#settleOpen(p);
        p.reject(fromWire(m));
        return;
      }
      case 'cancelled': {
        const p = this.#pending.get(m.id);
        if (p?.kind !== 'open' || p.stage !== 'waiting') return;
        this.#pending.delete(m.id);
        this.#settleOpen(p);
        p.reject(dpError('ECANCELED', 'dataplane.open', 'open cancelled', { reason: 'aborted' }));
        return;
      }
      case 'teardown': {
        if (this.state === 'closed') return;
        if (m.fault !== undefined) this.#fault ??= dpError(m.fault.code, 'dataplane', 'the authority ended this session after a failure', { reason: m.fault.reason });
        const fault = this.#fault;
        this.#failPending(fault !== undefined ? faultFor(fault, 'dataplane') : dpError('EBADF', 'dataplane', 'the authority closed this session', { reason: 'session-closed' }));
        for (const core of [...this.#cores]) void core.terminate(fault);
        this.#cores.clear();
        this.#finish();
        return;
      }
      default:
        return;
    }
  }

  /** Ends a pending open's local bookkeeping (listener, half-attached endpoint). */
  #settleOpen(p: PendingOpen): void {
    p.stage = 'done';
    if (p.onAbort !== undefined) p.signal?.removeEventListener('abort', p.onAbort);
    p.attaching?.release?.();
    p.attaching = undefined;
  }

  #cancelOpen(p: PendingOpen): void {
    if (p.cancelRequested || p.stage === 'done') return;
    p.cancelRequested = true;
    if (p.stage === 'attaching' && p.attaching !== undefined) {
      // Granted but not ready yet: give the grant back; the authority fails the matched peer (OP10).
      const token = p.attaching.token;
      this.#pending.delete(p.id);
      this.#settleOpen(p);
      this.#port.postMessage({ t: 'reject', token, code: 'ECANCELED' } satisfies ClientMessage);
      p.reject(dpError('ECANCELED', 'dataplane.open', 'open cancelled', { reason: 'aborted' }));
      return;
    }
    this.#port.postMessage({ t: 'cancel', id: p.id } satisfies ClientMessage);
  }

  #refuse(token: string, code: TenonError['code']): void {
    this.#port.postMessage({ t: 'reject', token, code } satisfies ClientMessage);
  }

  #onGrant(id: number, grant: GrantWire): void {
    const p = this.#pending.get(id);
    if (p?.kind !== 'open' || p.stage !== 'waiting' || p.cancelRequested || this.state !== 'running') {
      // Late or unknown grant (cancelled open, closed session): reclaim it (OP6, C4).
      this.#refuse(grant.token, 'ECANCELED');
      return;
    }
    p.stage = 'attaching';
    p.attaching = { token: grant.token };
    void this.#attach(p, grant).catch((err: unknown) => {
      if (p.stage === 'done') return;
      this.#pending.delete(id);
      this.#settleOpen(p);
      this.#refuse(grant.token, err instanceof TenonError ? err.code : 'EIO');
      p.reject(err);
    });
  }

  async #attach(p: PendingOpen, grant: GrantWire): Promise<void> {
    if (grant.kind === 'blob') {
      const b = grant.blob!;
      const io = await openBlobIO(this.plane, b.file, b.length, b.staged, this.#worker);
      if (p.stage !== 'attaching' || p.cancelRequested) {
        await io.close();
        if (p.stage === 'attaching') throw dpError('ECANCELED', 'dataplane.open', 'open cancelled', { reason: 'aborted' });
        return;
      }
      this.#deliver(p, new Core(this, grant, { io }));
      return;
    }
    const s = grant.stream!;
    const end = s.role === 'reader' ? new RingReader(s.ring, s.incarnation, s.generation) : new RingWriter(s.ring, s.incarnation, s.generation);
    const release = await holdLock(s.lock);
    if (p.attaching === undefined || p.stage !== 'attaching') {
      release();
      return;
    }
    p.attaching.release = release;
    const core = new Core(this, grant, { ...(end instanceof RingReader ? { reader: end } : { writer: end }), releaseLock: release });
    p.onReady = () => {
      p.attaching = undefined; // the lock now belongs to the descriptor
      this.#deliver(p, core);
    };
    this.#port.postMessage({ t: 'attached', id: p.id, token: grant.token } satisfies ClientMessage);
  }

  #deliver(p: PendingOpen, core: Core): void {
    this.#pending.delete(p.id);
    this.#settleOpen(p);
    this.#cores.add(core);
    p.resolve(newDescriptor(core));
  }
}

/**
 * Attaches a session over a port made by `DataPlane.createSessionPort` (in this or another context).
 * Resolves once the authority runs the session.
 */
export function connectSession(port: MessagePort): Promise<Session> {
  return new Promise<Session>((resolve, reject) => {
    if (!(port instanceof MessagePort)) {
      reject(dpError('EINVAL', 'connectSession', 'expected a MessagePort', { reason: 'bad-port' }));
      return;
    }
    port.onmessage = (e: MessageEvent) => {
      const m = e.data as AuthorityMessage;
      if (m?.t !== 'welcome') return;
      port.onmessage = null;
      holdLock(m.sessionLock).then(
        (release) => {
          const session = new SessionClient(port, m, release);
          const onRunning = (ev: MessageEvent): void => {
            if ((ev.data as AuthorityMessage)?.t !== 'running') return;
            port.removeEventListener('message', onRunning);
            // A liveness watch refused while attaching: the session is already ending; say why.
            if (session.fault !== undefined) reject(faultFor(session.fault, 'connectSession'));
            else resolve(session);
          };
          port.addEventListener('message', onRunning);
          port.postMessage({ t: 'hello' } satisfies ClientMessage);
        },
        (err: unknown) => reject(err),
      );
    };
    port.start();
  });
}

export { lockName };

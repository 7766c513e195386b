// The namespace authority (seed 004 §5.1, §6, §11; DESIGN.md "Namespace authority").
//
// Role: one per data plane, in the context that called createDataPlane. It is the kernel serializer:
// every message from every session is handled through one queue (`#serial`), so path bindings,
// publication, stream pairing, cancellation and teardown happen in one total order (N2, C6). It never
// moves payload bytes: blob bytes go between a session's context and OPFS, stream bytes through the
// shared ring (PF2, K8).
//
// Ownership: the authority owns the IndexedDB store (bindings `path -> node`, operation ids), the
// plane's OPFS folder (it alone deletes files), every ring it creates (it only flips state words after
// handing it out), and one Web Lock saying "this plane has an authority". It watches each session's
// and each stream endpoint's lock: a lock that becomes free without a clean goodbye means that context
// went away, which becomes ECONNRESET for the peer (C8) and a teardown of the session (D6).
//
// A watch that Web Locks refuses is reported, never swallowed: without it peer loss could no longer
// become ECONNRESET. A failed session watch tears the session down with EIO `lock-watch-failed`; a failed
// endpoint watch faults the stream's ring, so both ends fail with that error (DP-lock-watch-reported).
//
// Durability: the IndexedDB write of a new binding is the commit point of a blob publication. It runs
// with strict durability (store.ts), and the replaced revision's file is deleted only after that write
// completed, so no crash can leave a binding that points at a deleted file (DP-commit-durable). Files no
// binding and no live grant references are reclaimed at start and whenever their last user lets go.
import { entries, set, setMany } from 'idb-keyval';
import type { UseStore } from 'idb-keyval';
import { dpError, fromPlatform } from './errors.js';
import { authorized, resolvePath, resolvePrefix, validatePath, validateRunId } from './path.js';
import type { ResolvedAccess } from './path.js';
import { ENDPOINT, createRing, endpointState, markFaulted, markStale, settleEndpoint, wakeRing } from './ring.js';
import { RING_DEFAULT_CAPACITY, RING_FAULT, RING_MAX_CAPACITY, RING_MIN_CAPACITY, RING_WORD } from './ring-layout.js';
import { leakedCount } from './diagnostics.js';
import { holdLock, lockName, planeFolder, randomToken, refusedLockName, watchLock } from './opfs.js';
import { openNamespaceStore } from './store.js';
import type { NamespaceStore } from './store.js';
import type { AuthorityMessage, ClientMessage, GrantWire, OkValue, OpenMessage } from './protocol.js';
import type { AccessMode, Capability, DataPlaneFaults, DataPlaneStats, NodeInfo, ObjectKind, SessionAccess, DataPlaneSessionFaults } from './types.js';
import { TenonError } from '../errors.js';

/** How long createDataPlane waits for a previous authority of the same plane to let go (then EBUSY). */
const AUTHORITY_LOCK_WAIT_MS = 3000;
/** Largest blob one allocation may declare: 2^40 bytes, far above any OPFS quota, inside safe integers. */
export const MAX_BLOB_LENGTH = 2 ** 40;
const PLANE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const DIGEST = /^[0-9a-f]{64}$/;
const OP_ID = /^[\x21-\x7e]{1,128}$/;

interface BlobBinding {
  readonly kind: 'blob';
  readonly revision: number;
  readonly file: string;
  readonly length: number;
  readonly digest?: string;
}
interface StreamBinding {
  readonly kind: 'stream';
  readonly incarnation: number;
  readonly capacity: number;
}
type Binding = BlobBinding | StreamBinding;

interface OpRecord {
  readonly op: 'publish' | 'ensure' | 'replace';
  readonly path: string;
  readonly value: OkValue;
}

interface SessionState {
  readonly id: string;
  readonly port: MessagePort;
  readonly access: ResolvedAccess;
  readonly faults: DataPlaneSessionFaults;
  state: 'attaching' | 'running' | 'closed';
  readonly grants: Set<GrantState>;
  readonly waiters: Set<Waiter>;
  readonly watch: AbortController;
}

interface Pair {
  readonly path: string;
  readonly ring: SharedArrayBuffer;
  readonly incarnation: number;
  readonly generation: number;
  readonly grants: GrantState[];
  attached: number;
  ready: boolean;
}

interface GrantState {
  readonly token: string;
  readonly session: SessionState;
  readonly reqId: number;
  readonly path: string;
  readonly kind: ObjectKind;
  readonly access: AccessMode;
  live: boolean;
  // blobs
  readonly file?: string;
  readonly staged?: boolean;
  readonly length?: number;
  readonly declaredDigest?: string;
  readonly exclusive?: boolean;
  readonly opId?: string;
  publishing?: boolean;
  published?: boolean;
  // streams
  readonly pair?: Pair;
  readonly role?: 'reader' | 'writer';
  attached?: boolean;
  watch?: AbortController;
}

interface Waiter {
  readonly session: SessionState;
  readonly reqId: number;
  readonly role: 'reader' | 'writer';
  readonly path: string;
}

interface StreamSlot {
  reader?: Waiter;
  writer?: Waiter;
  pair?: Pair;
}

const nodeKey = (path: string): string => `n:${path}`;
const opKey = (opId: string): string => `op:${opId}`;
const noop = (): void => undefined;

export interface DataPlaneOptions {
  /** Names the plane's OPFS folder, IndexedDB store and locks. */
  readonly name: string;
}

/** The authority's public face. */
export interface DataPlane {
  readonly name: string;
  /** Test seams (mutable). */
  readonly faults: DataPlaneFaults;
  /** A port another context passes to `connectSession` to attach a session with these rights. */
  createSessionPort(access: SessionAccess): MessagePort;
  stats(): Promise<DataPlaneStats>;
  /** Deletes files that no binding and no live grant references; returns how many went. */
  reclaim(): Promise<number>;
  /** Ends every session and releases the plane (its bindings stay in IndexedDB and OPFS). */
  close(): Promise<void>;
}

/** Reads a stat-like description of a binding. */
function nodeInfo(path: string, b: Binding): NodeInfo {
  return b.kind === 'blob'
    ? { path, kind: 'blob', revision: b.revision, length: b.length, ...(b.digest === undefined ? {} : { digest: b.digest }) }
    : { path, kind: 'stream', incarnation: b.incarnation, capacity: b.capacity };
}

class Authority implements DataPlane {
  readonly name: string;
  readonly faults: DataPlaneFaults;
  readonly #store: UseStore;
  readonly #namespace: NamespaceStore;
  readonly #folder: FileSystemDirectoryHandle;
  readonly #bindings = new Map<string, Binding>();
  readonly #ops = new Map<string, OpRecord>();
  /** file -> path that binds it. */
  readonly #bound = new Map<string, string>();
  /** file -> live grants using it (readers, stagings, mappings through their grant). */
  readonly #refs = new Map<string, number>();
  /** path -> live exclusive-create stagings (OP2). */
  readonly #reservations = new Map<string, number>();
  readonly #sessions = new Map<string, SessionState>();
  readonly #grants = new Map<string, GrantState>();
  readonly #streams = new Map<string, StreamSlot>();
  readonly #held: Array<() => void> = [];
  #releaseLock: () => void;
  #queue: Promise<void> = Promise.resolve();
  #generation = 0;
  #dead = false;
  #messages = 0;
  #lockWatchFailures = 0;
  /** Seam: how many of the next lock watches start under a name Web Locks refuses. */
  #refuseWatches = 0;

  constructor(name: string, store: NamespaceStore, folder: FileSystemDirectoryHandle, releaseLock: () => void, stored: Array<[IDBValidKey, unknown]>) {
    this.name = name;
    this.#namespace = store;
    this.#store = store.use;
    this.#folder = folder;
    this.#releaseLock = releaseLock;
    for (const [key, value] of stored) {
      const k = String(key);
      if (k.startsWith('n:')) {
        const b = value as Binding;
        this.#bindings.set(k.slice(2), b);
        if (b.kind === 'blob') this.#bound.set(b.file, k.slice(2));
      } else if (k.startsWith('op:')) this.#ops.set(k.slice(3), value as OpRecord);
    }
    const held = this.#held;
    const streams = this.#streams;
    const storeFaults = store.faults;
    const authority = this;
    this.faults = {
      holdGrants: false,
      failTransportStarts: 0,
      corruptNextRing: false,
      crashAtPublish: 'none',
      get failNextCommit() {
        return storeFaults.failNextCommit;
      },
      set failNextCommit(on: boolean) {
        storeFaults.failNextCommit = on;
      },
      get failLockWatches() {
        return authority.#refuseWatches;
      },
      set failLockWatches(n: number) {
        authority.#refuseWatches = n;
      },
      releaseHeldGrants() {
        this.holdGrants = false;
        for (const send of held.splice(0)) send();
      },
      wakeStream(path: string) {
        const ring = streams.get(path)?.pair?.ring;
        if (ring !== undefined) wakeRing(ring);
      },
    };
  }

  // ------------------------------------------------------------------------------------------------
  // lifecycle

  /** Runs `fn` after every earlier message (the linearization point of all control decisions). */
  #serial(fn: () => Promise<void> | void): Promise<void> {
    const run = this.#queue.then(fn);
    this.#queue = run.then(noop, noop);
    return run;
  }

  #checkAlive(op: string): void {
    if (this.#dead) throw dpError('EIO', op, 'the data plane authority is gone', { reason: 'authority-gone' });
  }

  createSessionPort(access: SessionAccess): MessagePort {
    this.#checkAlive('dataplane.createSessionPort');
    const op = 'dataplane.createSessionPort';
    if (typeof access !== 'object' || access === null || !Array.isArray(access.read) || !Array.isArray(access.write)) {
      throw dpError('EINVAL', op, 'access needs read and write prefix lists', { reason: 'bad-access' });
    }
    const runId = validateRunId(access.runId ?? `run-${randomToken().slice(0, 8)}`, op);
    const resolved: ResolvedAccess = {
      runId,
      read: access.read.map((p) => resolvePrefix(p, runId, op)),
      write: access.write.map((p) => resolvePrefix(p, runId, op)),
    };
    const quota = access.faults?.quotaBytes;
    if (quota !== undefined && (!Number.isSafeInteger(quota) || quota < 0)) throw dpError('EINVAL', op, 'quotaBytes must be a non-negative integer', { reason: 'bad-fault' });
    const refuseWatch = access.faults?.failAuthorityWatch;
    if (refuseWatch !== undefined && typeof refuseWatch !== 'boolean') throw dpError('EINVAL', op, 'failAuthorityWatch must be a boolean', { reason: 'bad-fault' });
    const channel = new MessageChannel();
    const s: SessionState = {
      id: randomToken(),
      port: channel.port1,
      access: resolved,
      faults: { ...(quota === undefined ? {} : { quotaBytes: quota }), ...(refuseWatch === true ? { failAuthorityWatch: true } : {}) },
      state: 'attaching',
      grants: new Set(),
      waiters: new Set(),
      watch: new AbortController(),
    };
    this.#sessions.set(s.id, s);
    s.port.onmessage = (e: MessageEvent) => this.#onMessage(s, e.data);
    this.#post(s, {
      t: 'welcome',
      plane: this.name,
      sessionId: s.id,
      runId,
      read: resolved.read,
      write: resolved.write,
      faults: s.faults,
      sessionLock: lockName.session(this.name, s.id),
      authorityLock: lockName.authority(this.name),
    });
    return channel.port2;
  }

  async stats(): Promise<DataPlaneStats> {
    let files = 0;
    let boundFiles = 0;
    for await (const name of (this.#folder as unknown as { keys(): AsyncIterable<string> }).keys()) {
      files++;
      if (this.#bound.has(name)) boundFiles++;
    }
    let waiters = 0;
    let rings = 0;
    for (const slot of this.#streams.values()) {
      waiters += (slot.reader ? 1 : 0) + (slot.writer ? 1 : 0);
    }
    const pairs = new Set<Pair>();
    for (const g of this.#grants.values()) if (g.pair) pairs.add(g.pair);
    rings = pairs.size;
    return {
      sessions: [...this.#sessions.values()].filter((s) => s.state !== 'closed').length,
      grants: this.#grants.size,
      waiters,
      rings,
      bindings: this.#bindings.size,
      files,
      boundFiles,
      controlMessages: this.#messages,
      leaked: leakedCount(),
      commits: this.#namespace.commits,
      strictCommits: this.#namespace.strictCommits,
      lockWatchFailures: this.#lockWatchFailures,
    };
  }

  reclaim(): Promise<number> {
    this.#checkAlive('dataplane.reclaim');
    let removed = 0;
    return this.#serial(async () => {
      removed = await this.#sweep();
    }).then(() => removed);
  }

  /** Deletes every file in the folder that no binding and no live grant references. */
  async #sweep(): Promise<number> {
    const names: string[] = [];
    for await (const name of (this.#folder as unknown as { keys(): AsyncIterable<string> }).keys()) names.push(name);
    let removed = 0;
    for (const name of names) {
      if (this.#bound.has(name) || (this.#refs.get(name) ?? 0) > 0) continue;
      if (await this.#deleteFile(name)) removed++;
    }
    return removed;
  }

  async #deleteFile(file: string): Promise<boolean> {
    try {
      await this.#folder.removeEntry(file);
      return true;
    } catch {
      // Still open somewhere (a sync access handle being closed) or already gone: the next sweep retries.
      return false;
    }
  }

  close(): Promise<void> {
    if (this.#dead) return Promise.resolve();
    return this.#serial(async () => {
      for (const s of [...this.#sessions.values()]) {
        await this.#teardown(s, 'closed');
        this.#post(s, { t: 'teardown' });
        s.port.close();
      }
      await this.#sweep();
      this.#dead = true;
      this.#releaseLock();
    });
  }

  /** Fault seam: the authority dies on the spot, leaving files and sessions as they are. */
  #crash(): void {
    this.#dead = true;
    for (const s of this.#sessions.values()) {
      s.watch.abort();
      s.port.close();
    }
    for (const g of this.#grants.values()) g.watch?.abort();
    this.#releaseLock();
  }

  // ------------------------------------------------------------------------------------------------
  // messaging

  #post(s: SessionState, msg: AuthorityMessage): void {
    s.port.postMessage(msg);
  }

  #fail(s: SessionState, id: number, err: unknown): void {
    const e = err instanceof TenonError ? err : fromPlatform(err, 'authority');
    this.#post(s, { t: 'error', id, code: e.code, message: e.message, ...(e.reason === undefined ? {} : { reason: e.reason }), ...(e.path === undefined ? {} : { path: e.path }) });
  }

  #onMessage(s: SessionState, raw: unknown): void {
    if (this.#dead || s.state === 'closed') return;
    const msg = raw as ClientMessage;
    if (typeof msg !== 'object' || msg === null || typeof msg.t !== 'string') return;
    const id = 'id' in msg && typeof msg.id === 'number' ? msg.id : undefined;
    this.#messages++;
    this.#serial(() => (this.#dead ? undefined : this.#handle(s, msg))).catch((err: unknown) => {
      if (id !== undefined && !this.#dead) this.#fail(s, id, err);
    });
  }

  async #handle(s: SessionState, msg: ClientMessage): Promise<void> {
    switch (msg.t) {
      case 'hello':
        if (s.state !== 'attaching') return;
        s.state = 'running';
        this.#watch(lockName.session(this.name, s.id), s.watch.signal, () => this.#teardown(s, 'lost'), (err) => this.#sessionWatchFailed(s, err));
        this.#post(s, { t: 'running' });
        return;
      case 'open':
        return this.#open(s, msg);
      case 'cancel':
        return this.#cancel(s, msg.id);
      case 'attached':
        return this.#attached(s, msg.id, msg.token);
      case 'reject': {
        const g = this.#owned(s, msg.token);
        if (g !== undefined) await this.#endGrant(g, 'abort');
        return;
      }
      case 'publish':
        return this.#publish(s, msg.id, msg.token, msg.digest);
      case 'release': {
        const g = this.#owned(s, msg.token);
        if (g === undefined) throw dpError('EBADF', 'descriptor.close', 'no such grant in this session', { reason: 'not-owner' });
        await this.#endGrant(g, msg.how);
        this.#post(s, { t: 'ok', id: msg.id });
        return;
      }
      case 'ensure-stream':
        return this.#ensureStream(s, msg.id, msg.path, msg.capacity, msg.opId);
      case 'replace-stream':
        return this.#replaceStream(s, msg.id, msg.path, msg.opId);
      case 'stat':
        return this.#stat(s, msg.id, msg.path);
      case 'bye':
        await this.#teardown(s, 'closed');
        this.#post(s, { t: 'ok', id: msg.id });
        await this.#sweep();
        return;
      default:
        return;
    }
  }

  /** The grant with this token, if it is live and belongs to this session (K1, K3). */
  #owned(s: SessionState, token: unknown): GrantState | undefined {
    if (typeof token !== 'string') return undefined;
    const g = this.#grants.get(token);
    return g !== undefined && g.session === s && g.live ? g : undefined;
  }

  #sendGrant(s: SessionState, g: GrantState, wire: GrantWire): void {
    const send = (): void => {
      if (!this.#dead && g.live) this.#post(s, { t: 'grant', id: g.reqId, grant: wire });
    };
    if (this.faults.holdGrants) this.#held.push(send);
    else send();
  }

  // ------------------------------------------------------------------------------------------------
  // open

  /** Validate, resolve, authorize (seed 004 §6 steps 1-3). Returns the resolved path. */
  #resolve(s: SessionState, path: unknown, wantRead: boolean, wantWrite: boolean, op: string): string {
    const spelled = validatePath(path, op);
    const resolved = resolvePath(spelled, s.access.runId);
    if (!authorized(s.access, resolved, wantRead, wantWrite)) {
      throw dpError('EACCES', op, 'the session may not use this path with these rights', { reason: 'not-authorized', path: resolved });
    }
    return resolved;
  }

  #checkOpId(opId: unknown, op: string): string | undefined {
    if (opId === undefined) return undefined;
    if (typeof opId !== 'string' || !OP_ID.test(opId)) throw dpError('EINVAL', op, 'opId must be 1-128 printable characters', { reason: 'bad-op-id' });
    return opId;
  }

  async #open(s: SessionState, m: OpenMessage): Promise<void> {
    const op = 'dataplane.open';
    if (s.state !== 'running') throw dpError('EBADF', op, 'the session is not running', { reason: 'session-closed' });
    if (m.nonblocking === true) throw dpError('ENOTSUP', op, 'O_NONBLOCK is not supported yet', { reason: 'nonblocking' });
    if (m.access !== 'read' && m.access !== 'write' && m.access !== 'read-write') throw dpError('EINVAL', op, 'unknown access mode', { reason: 'bad-access' });
    if (m.kind !== undefined && m.kind !== 'blob' && m.kind !== 'stream') throw dpError('EINVAL', op, 'unknown kind', { reason: 'bad-kind' });
    if (m.exclusive && !m.create) throw dpError('EINVAL', op, 'exclusive needs create', { reason: 'exclusive-without-create' });
    const wantRead = m.access !== 'write';
    const wantWrite = m.access !== 'read';
    if (m.allocation !== undefined) {
      const a = m.allocation;
      if (!wantWrite || !(m.create || m.truncate)) throw dpError('EINVAL', op, 'allocation needs a creating or truncating writable open', { reason: 'allocation-misuse' });
      if (!Number.isSafeInteger(a.length) || a.length < 0 || a.length > MAX_BLOB_LENGTH) throw dpError('EINVAL', op, 'allocation length out of range', { reason: 'bad-length' });
      if (a.digest !== undefined && (typeof a.digest !== 'string' || !DIGEST.test(a.digest))) throw dpError('EINVAL', op, 'digest must be 64 lowercase hex digits', { reason: 'bad-digest' });
    }
    if ((m.create || m.truncate) && !wantWrite) throw dpError('EINVAL', op, 'create and truncate need write access', { reason: 'create-read-only' });
    const opId = this.#checkOpId(m.opId, op);
    const path = this.#resolve(s, m.path, wantRead, wantWrite, op);
    if (opId !== undefined) {
      const rec = this.#ops.get(opId);
      if (rec !== undefined && (rec.op !== 'publish' || rec.path !== path)) throw dpError('EINVAL', op, 'opId already used for another operation', { reason: 'op-id-reused', path });
    }
    const node = this.#bindings.get(path);
    if (node === undefined) {
      if (!m.create) throw dpError('ENOENT', op, 'no such path', { reason: m.kind === 'stream' ? 'stream-not-ensured' : 'missing', path });
      if (m.kind === 'stream') throw dpError('ENOENT', op, 'streams are created with ensureStream', { reason: 'stream-not-ensured', path });
      if (m.exclusive && (this.#reservations.get(path) ?? 0) > 0) throw dpError('EEXIST', op, 'path is being created exclusively', { reason: 'exists', path });
      return this.#stage(s, m, path, opId);
    }
    if (m.exclusive) throw dpError('EEXIST', op, 'path exists', { reason: 'exists', path });
    if (m.kind !== undefined && m.kind !== node.kind) throw dpError('ENXIO', op, `path is a ${node.kind}`, { reason: 'wrong-kind', path });
    if (node.kind === 'blob') {
      if (!wantWrite) return this.#openBlobRead(s, m, path, node);
      if (!m.truncate) throw dpError('ENOTSUP', op, 'writing a published blob in place is not supported; truncate to stage a replacement', { reason: 'non-truncating-write', path });
      return this.#stage(s, m, path, opId);
    }
    if (m.allocation !== undefined || m.truncate) throw dpError('EINVAL', op, 'allocation and truncate do not apply to streams', { reason: 'allocation-misuse', path });
    if (m.access === 'read-write') throw dpError('ENOTSUP', op, 'read-write stream opens are not supported', { reason: 'stream-read-write', path });
    return this.#openStream(s, m, path, node);
  }

  #ref(file: string): void {
    this.#refs.set(file, (this.#refs.get(file) ?? 0) + 1);
  }

  async #unref(file: string): Promise<void> {
    const n = (this.#refs.get(file) ?? 0) - 1;
    if (n > 0) {
      this.#refs.set(file, n);
      return;
    }
    this.#refs.delete(file);
    if (!this.#bound.has(file)) await this.#deleteFile(file);
  }

  #openBlobRead(s: SessionState, m: OpenMessage, path: string, node: BlobBinding): void {
    const g: GrantState = { token: randomToken(), session: s, reqId: m.id, path, kind: 'blob', access: m.access, live: true, file: node.file, staged: false, length: node.length };
    this.#track(g);
    this.#ref(node.file);
    const caps: Capability[] = ['READ', 'MAP_HOST'];
    this.#sendGrant(s, g, {
      token: g.token,
      kind: 'blob',
      access: m.access,
      path,
      capabilities: caps,
      blob: { file: node.file, length: node.length, revision: node.revision, staged: false, ...(node.digest === undefined ? {} : { digest: node.digest }) },
    });
  }

  #stage(s: SessionState, m: OpenMessage, path: string, opId: string | undefined): void {
    if (m.allocation === undefined) {
      throw dpError('ENOTSUP', 'dataplane.open', 'a writable blob needs a declared allocation length (general growth is not supported)', { reason: 'growth', path });
    }
    const file = `b-${randomToken()}`;
    const g: GrantState = {
      token: randomToken(),
      session: s,
      reqId: m.id,
      path,
      kind: 'blob',
      access: m.access,
      live: true,
      file,
      staged: true,
      length: m.allocation.length,
      exclusive: m.exclusive,
      ...(m.allocation.digest === undefined ? {} : { declaredDigest: m.allocation.digest }),
      ...(opId === undefined ? {} : { opId }),
    };
    this.#track(g);
    this.#ref(file);
    if (m.exclusive) this.#reservations.set(path, (this.#reservations.get(path) ?? 0) + 1);
    this.#sendGrant(s, g, {
      token: g.token,
      kind: 'blob',
      access: m.access,
      path,
      capabilities: ['READ', 'WRITE', 'MAP_HOST'],
      blob: { file, length: m.allocation.length, staged: true, ...(m.allocation.digest === undefined ? {} : { digest: m.allocation.digest }) },
    });
  }

  #track(g: GrantState): void {
    this.#grants.set(g.token, g);
    g.session.grants.add(g);
  }

  #slot(path: string): StreamSlot {
    let slot = this.#streams.get(path);
    if (slot === undefined) {
      slot = {};
      this.#streams.set(path, slot);
    }
    return slot;
  }

  #openStream(s: SessionState, m: OpenMessage, path: string, node: StreamBinding): void {
    const role = m.access === 'read' ? 'reader' : 'writer';
    const slot = this.#slot(path);
    const pairHolds = slot.pair !== undefined && slot.pair.grants.some((g) => g.role === role && g.live);
    if (slot[role] !== undefined || pairHolds) {
      throw dpError('EBUSY', 'dataplane.open', `the stream already has a ${role}`, { reason: 'role-taken', path });
    }
    const me: Waiter = { session: s, reqId: m.id, role, path };
    const other = role === 'reader' ? slot.writer : slot.reader;
    if (other === undefined) {
      slot[role] = me;
      s.waiters.add(me);
      return;
    }
    slot[other.role] = undefined;
    other.session.waiters.delete(other);
    this.#pair(slot, node, role === 'reader' ? me : other, role === 'writer' ? me : other);
  }

  /** Rendezvous: both roles are present. Creates the ring and grants both ends (OP9, OP10). */
  #pair(slot: StreamSlot, node: StreamBinding, reader: Waiter, writer: Waiter): void {
    const generation = ++this.#generation;
    if (this.faults.failTransportStarts > 0) {
      this.faults.failTransportStarts--;
      for (const w of [reader, writer]) {
        this.#fail(w.session, w.reqId, dpError('EIO', 'dataplane.open', 'stream transport failed to start', { reason: 'transport-start', path: w.path }));
      }
      return;
    }
    const ring = createRing(node.capacity, node.incarnation, generation);
    if (this.faults.corruptNextRing) {
      this.faults.corruptNextRing = false;
      new Int32Array(ring, 0, 4)[RING_WORD.MAGIC] = 0;
    }
    const pair: Pair = { path: reader.path, ring, incarnation: node.incarnation, generation, grants: [], attached: 0, ready: false };
    for (const w of [reader, writer]) {
      const g: GrantState = { token: randomToken(), session: w.session, reqId: w.reqId, path: w.path, kind: 'stream', access: w.role === 'reader' ? 'read' : 'write', live: true, pair, role: w.role };
      pair.grants.push(g);
      this.#track(g);
    }
    slot.pair = pair;
    for (const g of pair.grants) {
      this.#sendGrant(g.session, g, {
        token: g.token,
        kind: 'stream',
        access: g.access,
        path: g.path,
        capabilities: ['READ', 'WRITE'],
        stream: { ring, role: g.role!, incarnation: node.incarnation, generation, lock: lockName.endpoint(this.name, g.token) },
      });
    }
  }

  #attached(s: SessionState, id: number, token: string): void {
    const g = this.#owned(s, token);
    if (g === undefined || g.pair === undefined || g.attached || g.reqId !== id) return;
    g.attached = true;
    const pair = g.pair;
    if (++pair.attached < 2) return;
    pair.ready = true;
    for (const e of pair.grants) {
      e.watch = new AbortController();
      this.#watch(lockName.endpoint(this.name, e.token), e.watch.signal, () => this.#endpointGone(e), () => this.#endpointWatchFailed(e));
      this.#post(e.session, { t: 'ready', id: e.reqId });
    }
  }

  /**
   * Watches a liveness lock: `onFree` when its holder let go or died, `onFailed` when Web Locks refused
   * the watch itself. Both run through the serial queue, after every earlier decision.
   */
  #watch(name: string, signal: AbortSignal, onFree: () => Promise<void>, onFailed: (err: TenonError) => Promise<void>): void {
    let watched = name;
    if (this.#refuseWatches > 0) {
      this.#refuseWatches--;
      watched = refusedLockName(name);
    }
    watchLock(
      watched,
      signal,
      () => void this.#serial(() => (this.#dead ? undefined : onFree())),
      (err) =>
        void this.#serial(() => {
          if (this.#dead) return undefined;
          this.#lockWatchFailures++;
          return onFailed(err);
        }),
    );
  }

  /** The authority cannot see this session die: end it now and tell it why (DP-lock-watch-reported). */
  async #sessionWatchFailed(s: SessionState, err: TenonError): Promise<void> {
    if (s.state === 'closed') return;
    await this.#teardown(s, 'closed');
    this.#post(s, { t: 'teardown', fault: { code: err.code, reason: err.reason ?? 'lock-watch-failed' } });
    s.port.close();
  }

  /** Loss of this endpoint would go unseen: fault the ring so both ends fail with EIO (DP-lock-watch-reported). */
  async #endpointWatchFailed(g: GrantState): Promise<void> {
    if (!g.live || g.pair === undefined) return;
    markFaulted(g.pair.ring, RING_FAULT.LOCK_WATCH_FAILED);
  }

  /** An endpoint's lock became free: clean if it already settled its state, otherwise lost (C8). */
  async #endpointGone(g: GrantState): Promise<void> {
    if (!g.live || g.pair === undefined) return;
    const clean = endpointState(g.pair.ring, g.role!) !== ENDPOINT.OPEN;
    if (!clean) settleEndpoint(g.pair.ring, g.role!, ENDPOINT.LOST);
    await this.#endGrant(g, clean ? 'close' : 'abort');
  }

  #cancel(s: SessionState, id: number): void {
    for (const w of s.waiters) {
      if (w.reqId !== id) continue;
      s.waiters.delete(w);
      const slot = this.#streams.get(w.path);
      if (slot !== undefined && slot[w.role] === w) slot[w.role] = undefined;
    }
    this.#post(s, { t: 'cancelled', id });
  }

  /** Ends a grant exactly once (C6, C9); later calls for the same grant do nothing. */
  async #endGrant(g: GrantState, how: 'close' | 'abort' | 'teardown'): Promise<void> {
    if (!g.live) return;
    g.live = false;
    this.#grants.delete(g.token);
    g.session.grants.delete(g);
    if (g.kind === 'blob') {
      if (g.exclusive) {
        const n = (this.#reservations.get(g.path) ?? 1) - 1;
        if (n > 0) this.#reservations.set(g.path, n);
        else this.#reservations.delete(g.path);
      }
      await this.#unref(g.file!);
      return;
    }
    g.watch?.abort();
    const pair = g.pair!;
    if (how !== 'close') settleEndpoint(pair.ring, g.role!, how === 'teardown' ? ENDPOINT.TORN_DOWN : ENDPOINT.LOST);
    if (!pair.ready) {
      // The transport never became ready: the matched open fails too and no incarnation stays live (OP10).
      for (const other of pair.grants) {
        if (other === g || !other.live) continue;
        other.live = false;
        this.#grants.delete(other.token);
        other.session.grants.delete(other);
        this.#fail(other.session, other.reqId, dpError('ECONNRESET', 'dataplane.open', 'the matched peer went away before the stream was ready', { reason: 'peer-lost', path: other.path }));
      }
    }
    const slot = this.#streams.get(pair.path);
    if (slot?.pair === pair && pair.grants.every((e) => !e.live)) slot.pair = undefined;
  }

  // ------------------------------------------------------------------------------------------------
  // publication

  async #publish(s: SessionState, id: number, token: string, digest: string | undefined): Promise<void> {
    const op = 'descriptor.close';
    const g = this.#owned(s, token);
    if (g === undefined || !g.staged || g.publishing) throw dpError('EBADF', op, 'no publishable staging for this token', { reason: 'not-owner' });
    g.publishing = true;
    if (g.declaredDigest !== undefined && digest !== g.declaredDigest) {
      await this.#endGrant(g, 'abort');
      throw dpError('EIO', op, 'staged bytes do not match the declared digest', { reason: 'digest-mismatch', path: g.path });
    }
    if (g.opId !== undefined) {
      const rec = this.#ops.get(g.opId);
      if (rec !== undefined) {
        await this.#endGrant(g, 'abort');
        this.#post(s, { t: 'ok', id, value: rec.value });
        return;
      }
    }
    const prev = this.#bindings.get(g.path);
    if (prev !== undefined && prev.kind !== 'blob') {
      await this.#endGrant(g, 'abort');
      throw dpError('ENXIO', op, 'the path became a stream while the blob was staged', { reason: 'wrong-kind', path: g.path });
    }
    if (this.faults.crashAtPublish === 'before-commit') {
      this.#crash();
      return;
    }
    const revision = (prev?.revision ?? 0) + 1;
    const binding: BlobBinding = { kind: 'blob', revision, file: g.file!, length: g.length!, ...(digest === undefined ? {} : { digest }) };
    const value: OkValue = { revision };
    try {
      // The commit point (B7): until this strict-durability write completed, no reader can see the
      // revision, and nothing of the previous one is touched (DP-commit-durable).
      if (g.opId === undefined) await set(nodeKey(g.path), binding, this.#store);
      else await setMany([[nodeKey(g.path), binding], [opKey(g.opId), { op: 'publish', path: g.path, value } satisfies OpRecord]], this.#store);
    } catch (err) {
      // Nothing committed: the previous binding, its file and its readers stay exactly as they were.
      await this.#endGrant(g, 'abort');
      const platform = fromPlatform(err, op, g.path);
      throw dpError(platform.code, op, 'the namespace commit failed; nothing was published', { reason: 'commit-failed', path: g.path, cause: err });
    }
    if (this.faults.crashAtPublish === 'after-commit') {
      this.#crash();
      return;
    }
    this.#bindings.set(g.path, binding);
    if (g.opId !== undefined) this.#ops.set(g.opId, { op: 'publish', path: g.path, value });
    this.#bound.set(binding.file, g.path);
    g.published = true;
    // The commit is durable now; only from here may the replaced revision's file go (if no reader holds it).
    if (prev !== undefined) {
      this.#bound.delete(prev.file);
      if ((this.#refs.get(prev.file) ?? 0) === 0) await this.#deleteFile(prev.file);
    }
    await this.#endGrant(g, 'close');
    this.#post(s, { t: 'ok', id, value });
  }

  // ------------------------------------------------------------------------------------------------
  // namespace control

  async #persist(path: string, b: Binding, opId: string | undefined, rec: OpRecord | undefined): Promise<void> {
    if (opId === undefined || rec === undefined) await set(nodeKey(path), b, this.#store);
    else await setMany([[nodeKey(path), b], [opKey(opId), rec]], this.#store);
    this.#bindings.set(path, b);
    if (opId !== undefined && rec !== undefined) this.#ops.set(opId, rec);
  }

  /** Returns the recorded answer of a repeated operation id, or throws when the id meant something else (K5, K7). */
  #replay(opId: string | undefined, kind: OpRecord['op'], path: string, op: string): OkValue | undefined {
    if (opId === undefined) return undefined;
    const rec = this.#ops.get(opId);
    if (rec === undefined) return undefined;
    if (rec.op !== kind || rec.path !== path) throw dpError('EINVAL', op, 'opId already used for another operation', { reason: 'op-id-reused', path });
    return rec.value;
  }

  async #ensureStream(s: SessionState, id: number, path: unknown, capacity: unknown, opIdRaw: unknown): Promise<void> {
    const op = 'dataplane.ensureStream';
    if (s.state !== 'running') throw dpError('EBADF', op, 'the session is not running', { reason: 'session-closed' });
    const opId = this.#checkOpId(opIdRaw, op);
    const resolved = this.#resolve(s, path, false, true, op);
    const cap = capacity === undefined ? RING_DEFAULT_CAPACITY : capacity;
    if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < RING_MIN_CAPACITY || cap > RING_MAX_CAPACITY || (cap & (cap - 1)) !== 0) {
      throw dpError('EINVAL', op, 'capacity must be a power of two within the ring limits', { reason: 'bad-capacity', path: resolved });
    }
    const replay = this.#replay(opId, 'ensure', resolved, op);
    if (replay !== undefined) return this.#post(s, { t: 'ok', id, value: replay });
    const node = this.#bindings.get(resolved);
    if (node !== undefined && node.kind !== 'stream') throw dpError('ENXIO', op, 'path is a blob', { reason: 'wrong-kind', path: resolved });
    const value: OkValue = { created: node === undefined };
    if (node === undefined) await this.#persist(resolved, { kind: 'stream', incarnation: 1, capacity: cap }, opId, opId === undefined ? undefined : { op: 'ensure', path: resolved, value });
    else if (opId !== undefined) {
      await set(opKey(opId), { op: 'ensure', path: resolved, value } satisfies OpRecord, this.#store);
      this.#ops.set(opId, { op: 'ensure', path: resolved, value });
    }
    this.#post(s, { t: 'ok', id, value });
  }

  async #replaceStream(s: SessionState, id: number, path: unknown, opIdRaw: unknown): Promise<void> {
    const op = 'dataplane.replaceStream';
    if (s.state !== 'running') throw dpError('EBADF', op, 'the session is not running', { reason: 'session-closed' });
    const opId = this.#checkOpId(opIdRaw, op);
    const resolved = this.#resolve(s, path, false, true, op);
    const replay = this.#replay(opId, 'replace', resolved, op);
    if (replay !== undefined) return this.#post(s, { t: 'ok', id, value: replay });
    const node = this.#bindings.get(resolved);
    if (node !== undefined && node.kind !== 'stream') throw dpError('ENXIO', op, 'path is a blob', { reason: 'wrong-kind', path: resolved });
    const next: StreamBinding = { kind: 'stream', incarnation: (node?.incarnation ?? 0) + 1, capacity: node?.capacity ?? RING_DEFAULT_CAPACITY };
    const value: OkValue = { incarnation: next.incarnation };
    await this.#persist(resolved, next, opId, opId === undefined ? undefined : { op: 'replace', path: resolved, value });
    const slot = this.#streams.get(resolved);
    if (slot !== undefined) {
      // The old incarnation goes stale: attached ends see ESTALE, waiting opens fail with ESTALE (S11, K4).
      if (slot.pair !== undefined) markStale(slot.pair.ring);
      slot.pair = undefined;
      for (const role of ['reader', 'writer'] as const) {
        const w = slot[role];
        if (w === undefined) continue;
        slot[role] = undefined;
        w.session.waiters.delete(w);
        this.#fail(w.session, w.reqId, dpError('ESTALE', 'dataplane.open', 'the stream was replaced while this open waited', { reason: 'replaced', path: resolved }));
      }
    }
    this.#post(s, { t: 'ok', id, value });
  }

  #stat(s: SessionState, id: number, path: unknown): void {
    const op = 'dataplane.stat';
    if (s.state !== 'running') throw dpError('EBADF', op, 'the session is not running', { reason: 'session-closed' });
    const resolved = this.#resolve(s, path, true, false, op);
    const node = this.#bindings.get(resolved);
    if (node === undefined) throw dpError('ENOENT', op, 'no such path', { reason: 'missing', path: resolved });
    this.#post(s, { t: 'ok', id, value: { node: nodeInfo(resolved, node) } });
  }

  // ------------------------------------------------------------------------------------------------
  // teardown

  /** Ends a session and everything it owns, once (D6, C7). */
  async #teardown(s: SessionState, cause: 'closed' | 'lost'): Promise<void> {
    if (s.state === 'closed') return;
    s.state = 'closed';
    s.watch.abort();
    for (const w of s.waiters) {
      const slot = this.#streams.get(w.path);
      if (slot !== undefined && slot[w.role] === w) slot[w.role] = undefined;
    }
    s.waiters.clear();
    for (const g of [...s.grants]) {
      if (g.kind === 'stream' && g.pair !== undefined) settleEndpoint(g.pair.ring, g.role!, cause === 'lost' ? ENDPOINT.LOST : ENDPOINT.TORN_DOWN);
      await this.#endGrant(g, cause === 'lost' ? 'abort' : 'teardown');
    }
    this.#sessions.delete(s.id);
  }
}

/** Starts the authority of plane `name` in this context (EBUSY while another one holds it). */
export async function createDataPlane(options: DataPlaneOptions): Promise<DataPlane> {
  const op = 'createDataPlane';
  const name = options?.name;
  if (typeof name !== 'string' || !PLANE_NAME.test(name)) throw dpError('EINVAL', op, 'plane name must be 1-64 of [A-Za-z0-9._-]', { reason: 'bad-name' });
  if (typeof navigator === 'undefined' || navigator.locks === undefined || navigator.storage?.getDirectory === undefined) {
    throw dpError('ENOTSUP', op, 'the data plane needs OPFS and Web Locks', { reason: 'platform' });
  }
  if (typeof SharedArrayBuffer === 'undefined' || !globalThis.crossOriginIsolated) {
    throw dpError('ENOTSUP', op, 'streams need SharedArrayBuffer (serve the page cross-origin isolated)', { reason: 'not-isolated' });
  }
  const release = await holdLock(lockName.authority(name), AbortSignal.timeout(AUTHORITY_LOCK_WAIT_MS)).catch((err: unknown) => {
    throw dpError('EBUSY', op, 'another authority holds this plane', { reason: 'plane-busy', cause: err });
  });
  try {
    const namespace = openNamespaceStore(`tenon-dataplane/${name}`, 'namespace');
    const store = namespace.use;
    const stored = await entries(store);
    const folder = await planeFolder(name);
    // Recovery: every stream node gets a fresh incarnation, so no ring of an earlier authority can ever
    // match a grant of this one (K6); blob bindings are kept exactly (K7).
    const bumped: Array<[IDBValidKey, unknown]> = [];
    for (const [key, value] of stored) {
      const b = value as Binding;
      if (String(key).startsWith('n:') && b.kind === 'stream') bumped.push([key, { ...b, incarnation: b.incarnation + 1 }]);
    }
    if (bumped.length > 0) await setMany(bumped, store);
    const recovered = stored.map(([k, v]): [IDBValidKey, unknown] => bumped.find(([bk]) => bk === k) ?? [k, v]);
    const authority = new Authority(name, namespace, folder, release, recovered);
    await authority.reclaim(); // orphans of an earlier run: stagings never published, replaced revisions
    return authority;
  } catch (err) {
    release();
    throw fromPlatform(err, op);
  }
}


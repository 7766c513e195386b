// Public types of the data plane (seed 004 §5-§8; DESIGN.md "src/dataplane"). Type-only.

/** First-milestone object kinds (seed 004 §5.1). */
export type ObjectKind = 'blob' | 'stream';

/** Rights requested at open; O_RDONLY / O_WRONLY / O_RDWR. */
export type AccessMode = 'read' | 'write' | 'read-write';

/** What an opened object supports (rights are separate: both checks apply). */
export type Capability = 'READ' | 'WRITE' | 'MAP_HOST' | 'MAP_DEVICE' | 'SEEK' | 'POLL' | 'CONTROL';

/** Fixed-length staging extension for writable blob opens (seed 004 §5.3 `allocation`). */
export interface BlobAllocation {
  /** Exact length of the revision the descriptor will publish. */
  readonly length: number;
  /** Lowercase hex SHA-256 the staged bytes must match before publication (B8, B9). */
  readonly digest?: string;
}

export interface OpenOptions {
  /** Default 'read'. */
  readonly access?: AccessMode;
  /** O_CREAT: create a missing blob (streams are created by `ensureStream`). */
  readonly create?: boolean;
  /** O_EXCL: with `create`, fail with EEXIST when the path exists or is being created. */
  readonly exclusive?: boolean;
  /** O_TRUNC: stage a replacement of an existing blob. */
  readonly truncate?: boolean;
  /** O_NONBLOCK: not supported yet; always ENOTSUP (never partially emulated). */
  readonly nonblocking?: boolean;
  readonly allocation?: BlobAllocation;
  /** Typed open: fail with ENXIO when the node is of the other kind (N5). */
  readonly kind?: ObjectKind;
  /** Cancels a pending open (OP6). */
  readonly signal?: AbortSignal;
  /** Idempotence key for the namespace change this open may publish (K5, K7). */
  readonly opId?: string;
}

export interface IoOptions {
  readonly signal?: AbortSignal;
}

/** Rights of a session: resolved path prefixes it may read and write. */
export interface SessionAccess {
  /** The run `/runs/self` stands for; generated when omitted. */
  readonly runId?: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
  /** Test-only fault seams applied inside the session's own context. */
  readonly faults?: DataPlaneSessionFaults;
}

/** Fault seams that act in the context that holds the session (never mocks of browser APIs). */
export interface DataPlaneSessionFaults {
  /** Bytes this session may still write into OPFS staging; beyond it writes fail with ENOSPC. */
  readonly quotaBytes?: number;
  /** The session's watch of the authority's lock is refused by Web Locks (DP-lock-watch-reported). */
  readonly failAuthorityWatch?: boolean;
}

/** Fault seams inside the authority. Mutable: tests flip them between steps. */
export interface DataPlaneFaults {
  /** Queue open grants instead of sending them, until `releaseHeldGrants()`. */
  holdGrants: boolean;
  /** The next N stream pairings fail to start their transport (OP10). */
  failTransportStarts: number;
  /** The next stream ring is handed out with a corrupt header. */
  corruptNextRing: boolean;
  /** Make the authority die in the middle of the next publication. */
  crashAtPublish: 'none' | 'before-commit' | 'after-commit';
  /** Abort the next IndexedDB commit (a real transaction abort): that publication or change fails. */
  failNextCommit: boolean;
  /** The next N Web Lock watches the authority starts are refused by the platform. */
  failLockWatches: number;
  /** Sends every held grant (in order). */
  releaseHeldGrants(): void;
  /** Wakes both ends of the live ring at `path` without changing anything (a spurious wakeup). */
  wakeStream(path: string): void;
}

/** Namespace view of a node, as `stat` reports it. */
export type NodeInfo =
  | { readonly path: string; readonly kind: 'blob'; readonly revision: number; readonly length: number; readonly digest?: string }
  | { readonly path: string; readonly kind: 'stream'; readonly incarnation: number; readonly capacity: number };

export type DescriptorState = 'open' | 'closed' | 'aborted' | 'torn-down';

/** Public, transport-free facts about an open descriptor (D7: no files, rings or ids). */
export interface DescriptorInfo {
  readonly state: DescriptorState;
  readonly kind: ObjectKind;
  readonly access: AccessMode;
  /** Sequential offset (blobs). */
  readonly offset?: number;
  /** Revision length (blobs). */
  readonly length?: number;
  /** Revision read (blob readers) or published at clean close (staged blobs, once published). */
  readonly revision?: number;
  /** Framed bytes in the ring (streams). */
  readonly queuedBytes?: number;
  /** Bytes one write could take now (stream writers). */
  readonly writableBytes?: number;
  /** Unread bytes of a partly read record (stream readers). */
  readonly pinnedBytes?: number;
  /** Clean EOF was observed (stream readers). */
  readonly eof?: boolean;
  /** Live mappings created from this description. */
  readonly mappings: number;
  /** Region transfers by route (M10). */
  readonly routes: { readonly direct: number; readonly staged: number };
}

export type Protection = 'read' | 'read-write';
export type Sharing = 'shared' | 'private';

export interface MapRequest {
  readonly protection: Protection;
  /** Only 'shared' in the first milestone. */
  readonly sharing?: Sharing;
  /** Only 'host' in the first milestone. */
  readonly target?: 'host' | { readonly device: string };
  readonly offset?: number;
  /** Default: to the end of the blob. */
  readonly length?: number;
}

/** A memory region readInto/writeFrom can target (seed 004 §8.1). */
export type MemoryRegion = HostRegion | DeviceRegion;

export interface HostRegion {
  readonly kind: 'host';
  readonly bytes: Uint8Array;
  readonly readable: boolean;
  readonly writable: boolean;
}

/**
 * A device allocation adapted by a higher layer (e.g. a GPU tensor). The data plane never touches its
 * memory directly: it moves bytes through `upload`/`download`, whose promises resolve only after the
 * device fence that makes the range safe for its next user (M9).
 */
export interface DeviceRegion {
  readonly kind: 'device';
  readonly byteLength: number;
  readonly readable: boolean;
  readonly writable: boolean;
  /** Direct routes the region supports; empty in browsers (every transfer is staged through host memory). */
  readonly directRoutes: readonly string[];
  upload(src: Uint8Array, regionOffset: number): Promise<void>;
  download(dst: Uint8Array, regionOffset: number): Promise<void>;
}

export type TransferRoute = 'direct' | 'staged' | 'any';

export interface RegionIoOptions extends IoOptions {
  /** Byte offset inside the region (default 0). */
  readonly offset?: number;
  /** Bytes to move at most (default: rest of the region). */
  readonly length?: number;
  /** 'direct' fails with ENOTSUP when only a staged route exists (M10). Default 'any'. */
  readonly route?: TransferRoute;
}

export interface DataPlaneStats {
  readonly sessions: number;
  /** Live grants: open descriptors, mappings' references and grants not yet reclaimed. */
  readonly grants: number;
  /** Blocked stream opens. */
  readonly waiters: number;
  /** Stream rings with at least one attached endpoint. */
  readonly rings: number;
  readonly bindings: number;
  /** Files in this data plane's OPFS folder, and how many of them the namespace binds. */
  readonly files: number;
  readonly boundFiles: number;
  /** Messages the authority has handled since it started (opens, closes, control): never one per byte or per I/O call. */
  readonly controlMessages: number;
  /** FinalizationRegistry diagnostics: descriptors dropped without close in this context. */
  readonly leaked: number;
  /** IndexedDB write transactions of the namespace that committed, and how many ran with strict durability. */
  readonly commits: number;
  readonly strictCommits: number;
  /** Web Lock watches (sessions, stream endpoints) the platform refused; each was reported to its users. */
  readonly lockWatchFailures: number;
}

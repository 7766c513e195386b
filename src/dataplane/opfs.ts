// OPFS and Web Locks plumbing shared by the authority and the sessions. Each data plane owns one OPFS
// folder, `tenon-dataplane/<plane>/`, holding immutable revision files and staging files; which file a
// path currently means is decided only by the authority's bindings (IndexedDB).
import { dpError, fromPlatform } from './errors.js';
import type { TenonError } from '../errors.js';

const ROOT_FOLDER = 'tenon-dataplane';
const folders = new Map<string, Promise<FileSystemDirectoryHandle>>();

/** The plane's OPFS folder (created on first use, cached per context). */
export function planeFolder(plane: string): Promise<FileSystemDirectoryHandle> {
  let f = folders.get(plane);
  if (f === undefined) {
    f = (async () => {
      const root = await navigator.storage.getDirectory();
      const top = await root.getDirectoryHandle(ROOT_FOLDER, { create: true });
      return top.getDirectoryHandle(plane, { create: true });
    })();
    f.catch(() => folders.delete(plane));
    folders.set(plane, f);
  }
  return f;
}

export async function fileHandle(plane: string, file: string, create: boolean, op: string): Promise<FileSystemFileHandle> {
  try {
    return await (await planeFolder(plane)).getFileHandle(file, { create });
  } catch (err) {
    throw fromPlatform(err, op);
  }
}

/** True in a dedicated worker, the only context with synchronous OPFS access handles and Atomics.wait. */
export function inDedicatedWorker(): boolean {
  const scope = globalThis as { DedicatedWorkerGlobalScope?: abstract new () => unknown };
  return typeof scope.DedicatedWorkerGlobalScope === 'function' && globalThis instanceof scope.DedicatedWorkerGlobalScope;
}

/** Lock names: one namespace per plane, never derived from anything a caller can choose freely. */
export const lockName = {
  authority: (plane: string) => `tenon-dataplane/${plane}/authority`,
  session: (plane: string, session: string) => `tenon-dataplane/${plane}/session/${session}`,
  endpoint: (plane: string, token: string) => `tenon-dataplane/${plane}/endpoint/${token}`,
};

/**
 * Takes an exclusive Web Lock and keeps it until the returned function is called (or the context dies,
 * which is what makes loss observable to whoever waits on the lock).
 */
export function holdLock(name: string, signal?: AbortSignal): Promise<() => void> {
  return new Promise((acquired, failed) => {
    navigator.locks
      .request(name, signal === undefined ? {} : { signal }, () => new Promise<void>((release) => acquired(release)))
      .catch((err: unknown) => failed(dpError('EBUSY', 'lock.hold', `lock ${name} not acquired`, { reason: 'lock-unavailable', cause: err })));
  });
}

/**
 * Calls `onFree` once the lock becomes free (its holder released it or died), unless `signal` aborts
 * first. Uses a shared request so several watchers never block each other; the lock is given back at once.
 * When Web Locks refuses the request itself (anything but our own abort), `onFailed` gets an EIO
 * `lock-watch-failed`: the watcher can no longer see the holder go away and must say so, never assume
 * the holder is alive (DP-lock-watch-reported).
 */
export function watchLock(name: string, signal: AbortSignal, onFree: () => void, onFailed: (err: TenonError) => void): void {
  let freed = false;
  navigator.locks
    .request(name, { mode: 'shared', signal }, () => {
      freed = true;
      onFree();
    })
    .catch((err: unknown) => {
      if (freed || signal.aborted) return;
      onFailed(dpError('EIO', 'lock.watch', `watching lock ${name} failed`, { reason: 'lock-watch-failed', cause: err }));
    });
}

/**
 * Fault seam for watchLock: the same name behind a leading '-', which the Web Locks API reserves and
 * refuses (NotSupportedError), so the platform itself fails the watch and the production path reports it.
 */
export function refusedLockName(name: string): string {
  return `-${name}`;
}

export function randomToken(): string {
  return crypto.randomUUID();
}

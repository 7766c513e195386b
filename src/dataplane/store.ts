// The namespace store: the authority's IndexedDB database, reached through idb-keyval (seed 004 §11.1
// "recover durable namespace state"; K7; B7).
//
// Contract: every read-write transaction opened through `use` asks IndexedDB for STRICT durability, so
// the transaction's `complete` event (which is when idb-keyval's `set` / `setMany` resolve) fires only
// after the browser has flushed the change to disk. Chromium's default is relaxed durability, where
// `complete` may come before the data is on disk; a binding flip acknowledged that way could vanish in a
// power cut after the old revision's file was already deleted. Callers therefore treat a resolved write
// as a durable commit and may free what the previous binding pointed at only after it resolved.
//
// Ownership: the store owns one IDBDatabase connection per plane (opened lazily, reopened if the browser
// closes it). It counts completed read-write transactions and how many of them ran strict, so tests can
// check the durability of the real transactions. Single-threaded: it lives in the authority's context.
import type { UseStore } from 'idb-keyval';

/** Fault seam of the store (mutable; the authority exposes it through DataPlaneFaults). */
export interface StoreFaults {
  /** Abort the next read-write transaction after its writes were issued (a real IndexedDB abort). */
  failNextCommit: boolean;
}

export interface NamespaceStore {
  /** What idb-keyval's functions take as their `customStore` argument. */
  readonly use: UseStore;
  readonly faults: StoreFaults;
  /** Read-write transactions that completed (committed). */
  readonly commits: number;
  /** Of those, how many ran with strict durability (every one, unless the platform ignored the hint). */
  readonly strictCommits: number;
}

const request = <T>(r: IDBOpenDBRequest): Promise<T> =>
  new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result as T);
    r.onerror = () => reject(r.error);
  });

/** Opens (lazily) the object store `storeName` of database `dbName` with strict-durability writes. */
export function openNamespaceStore(dbName: string, storeName: string): NamespaceStore {
  let db: Promise<IDBDatabase> | undefined;
  const connect = (): Promise<IDBDatabase> => {
    if (db !== undefined) return db;
    const open = indexedDB.open(dbName);
    open.onupgradeneeded = () => open.result.createObjectStore(storeName);
    const opened = request<IDBDatabase>(open);
    db = opened;
    opened.then(
      (conn) => {
        conn.onclose = () => (db = undefined);
      },
      () => (db = undefined),
    );
    return opened;
  };
  const counts = { commits: 0, strictCommits: 0 };
  const faults: StoreFaults = { failNextCommit: false };
  const use: UseStore = (mode, callback) =>
    connect().then((conn) => {
      if (mode !== 'readwrite') return callback(conn.transaction(storeName, mode).objectStore(storeName));
      const tx = conn.transaction(storeName, mode, { durability: 'strict' });
      // addEventListener, not oncomplete: idb-keyval assigns oncomplete itself to settle its promise.
      tx.addEventListener('complete', () => {
        counts.commits++;
        if (tx.durability === 'strict') counts.strictCommits++;
      });
      const settled = callback(tx.objectStore(storeName));
      if (faults.failNextCommit) {
        faults.failNextCommit = false;
        tx.abort();
      }
      return settled;
    });
  return {
    use,
    faults,
    get commits() {
      return counts.commits;
    },
    get strictCommits() {
      return counts.strictCommits;
    },
  };
}

// Memory layout of one stream ring (seed 004 §7.4; DESIGN.md "Streams on SharedArrayBuffer rings").
// Constants only: no logic lives here, so the layout can be read (and reviewed) in one place.
//
// One SharedArrayBuffer holds a header of RING_HEADER_BYTES bytes followed by the data area of
// `capacity` bytes (a power of two). The header is an Int32Array; every word below is accessed only with
// Atomics. Words written by the producer and by the consumer sit on different 64-byte lines so the two
// sides do not fight over one cache line.
//
// Cursors are free-running 32-bit counters of bytes ever published (WRITE) and ever released (READ);
// a byte's place in the data area is `cursor & (capacity - 1)`, and `(WRITE - READ) | 0` is the number of
// bytes in use. Because the counters never wrap at `capacity` there is no need to keep a slot empty to
// tell "full" from "empty". The counters start near 2^32 (RING_INITIAL_CURSOR) so that every ring crosses
// the 32-bit wrap point early and that arithmetic is exercised by every test, not just by long runs.
//
// The data area holds records: a 4-byte header word `(type << RECORD_TYPE_SHIFT) | payloadLength`, then
// the payload padded to 4 bytes. Headers are 4-byte aligned and the capacity is a multiple of 4, so a
// header never straddles the end of the data area; a payload may, and is then copied in two parts.
// Record types: DATA carries bytes; EOF ends the stream cleanly; FAULT ends it abnormally (writer abort).
// EOF and FAULT are framed like data, so they can never overtake bytes published before them.
//
// The producer never fills the last RECORD_HEADER_BYTES of free space with data: that reserve is where
// its terminal record (EOF or FAULT) goes, so close and abort never wait for the consumer.
//
// The consumer releases a DATA record (advances READ) only after its whole payload was returned; a
// partially read record keeps its space pinned (RING3).
//
// Waiting: the consumer waits on DATA_SEQ, the producer on SPACE_SEQ. Whoever changes what the other
// side waits for (publishing a record, releasing one, changing an endpoint state) increments that word
// and notifies it. A waiter snapshots the word, rechecks its condition, then waits only while the word
// still has the snapshot value, so a wakeup between check and wait cannot be lost (S10, A3).

/** Identifies an initialized ring ("TRNG"). */
export const RING_MAGIC = 0x54524e47;
/** Bytes before the data area. */
export const RING_HEADER_BYTES = 256;
/** Int32 word indices inside the header. */
export const RING_WORD = {
  MAGIC: 0,
  CAPACITY: 1,
  INCARNATION: 2,
  GENERATION: 3,
  /** Set by the authority when the incarnation was replaced (ESTALE for both ends). */
  STALE: 4,
  /** A RING_FAULT value set by the authority when it can no longer supervise the stream (EIO for both ends). */
  FAULT: 5,
  // producer line
  WRITE: 16,
  WRITER_STATE: 17,
  SPACE_SEQ: 18,
  // consumer line
  READ: 32,
  READER_STATE: 33,
  DATA_SEQ: 34,
} as const;

/** Endpoint states stored in WRITER_STATE / READER_STATE. */
export const ENDPOINT = {
  OPEN: 0,
  /** Clean close (writer: EOF record published; reader: detached). */
  CLOSED: 1,
  /** Explicit abort by the endpoint itself. */
  ABORTED: 2,
  /** The authority saw the endpoint's context go away without a terminal step. */
  LOST: 3,
  /** The endpoint's session was torn down by the authority. */
  TORN_DOWN: 4,
} as const;

/** Values of the FAULT word (0: none). */
export const RING_FAULT = {
  NONE: 0,
  /** The authority's Web Lock watch of an endpoint failed: peer loss would go unseen. */
  LOCK_WATCH_FAILED: 1,
} as const;

export const RECORD_HEADER_BYTES = 4;
export const RECORD_ALIGN = 4;
export const RECORD_TYPE_SHIFT = 27;
export const RECORD_LENGTH_MASK = (1 << RECORD_TYPE_SHIFT) - 1;
export const RECORD = { DATA: 1, EOF: 2, FAULT: 3 } as const;

/** Smallest and largest data areas (bytes). The upper bound keeps payload lengths inside the 27-bit field. */
export const RING_MIN_CAPACITY = 16;
export const RING_MAX_CAPACITY = 1 << 26;
/** Default data area of a stream ring: 1 MiB, the size TOOLCHAIN.md measured peers with. */
export const RING_DEFAULT_CAPACITY = 1 << 20;
/** Where both cursors start: 4 KiB before the 32-bit wrap point (see the layout comment above). */
export const RING_INITIAL_CURSOR = -4096;

// Merge queue for the tokenizer engines: a binary min-heap of candidate pairs ordered by (priority, left
// symbol index), each carrying the right symbol index and the byte size the pair had when it was pushed.
// Entries are never removed early; the engines drop stale ones when they pop them (the pair's symbols
// changed since). Storage is four parallel typed arrays that grow by doubling; one queue is reused across
// pieces (`clear`). Single-threaded, owned by one engine.

const INITIAL_CAPACITY = 64;

export class PairQueue {
  #priority = new Float64Array(INITIAL_CAPACITY);
  #left = new Int32Array(INITIAL_CAPACITY);
  #right = new Int32Array(INITIAL_CAPACITY);
  #size = new Int32Array(INITIAL_CAPACITY);
  #count = 0;
  /** The entry `pop` last removed. */
  topPriority = 0;
  topLeft = 0;
  topRight = 0;
  topSize = 0;

  get length(): number {
    return this.#count;
  }

  clear(): void {
    this.#count = 0;
  }

  push(priority: number, left: number, right: number, size: number): void {
    if (this.#count === this.#left.length) this.#grow();
    let i = this.#count++;
    // Sift up: move parents down until the new entry's place is found.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(priority, left, this.#priority[parent]!, this.#left[parent]!)) break;
      this.#move(parent, i);
      i = parent;
    }
    this.#set(i, priority, left, right, size);
  }

  /** Removes the smallest entry into top*; false when the queue is empty. */
  pop(): boolean {
    if (this.#count === 0) return false;
    this.topPriority = this.#priority[0]!;
    this.topLeft = this.#left[0]!;
    this.topRight = this.#right[0]!;
    this.topSize = this.#size[0]!;
    const last = --this.#count;
    if (last === 0) return true;
    const p = this.#priority[last]!;
    const l = this.#left[last]!;
    const r = this.#right[last]!;
    const s = this.#size[last]!;
    // Sift down from the root with the last entry.
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      const other = child + 1;
      if (other < last && this.#before(this.#priority[other]!, this.#left[other]!, this.#priority[child]!, this.#left[child]!)) child = other;
      if (!this.#before(this.#priority[child]!, this.#left[child]!, p, l)) break;
      this.#move(child, i);
      i = child;
    }
    this.#set(i, p, l, r, s);
    return true;
  }

  #before(p1: number, l1: number, p2: number, l2: number): boolean {
    return p1 < p2 || (p1 === p2 && l1 < l2);
  }

  #move(from: number, to: number): void {
    this.#priority[to] = this.#priority[from]!;
    this.#left[to] = this.#left[from]!;
    this.#right[to] = this.#right[from]!;
    this.#size[to] = this.#size[from]!;
  }

  #set(i: number, priority: number, left: number, right: number, size: number): void {
    this.#priority[i] = priority;
    this.#left[i] = left;
    this.#right[i] = right;
    this.#size[i] = size;
  }

  #grow(): void {
    const capacity = this.#left.length * 2;
    const priority = new Float64Array(capacity);
    priority.set(this.#priority);
    this.#priority = priority;
    this.#left = grown(this.#left, capacity);
    this.#right = grown(this.#right, capacity);
    this.#size = grown(this.#size, capacity);
  }
}

function grown(array: Int32Array<ArrayBuffer>, capacity: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(capacity);
  bigger.set(array);
  return bigger;
}

/** Growable per-symbol arrays (length in bytes, previous and next live symbol) shared by the engines. */
export class SymbolList {
  start = new Int32Array(INITIAL_CAPACITY);
  len = new Int32Array(INITIAL_CAPACITY);
  prev = new Int32Array(INITIAL_CAPACITY);
  next = new Int32Array(INITIAL_CAPACITY);
  /** Token id of the symbol (-1 where it is not a token yet); used by the BPE engine. */
  id = new Int32Array(INITIAL_CAPACITY);

  /** Makes room for `count` symbols (contents are not kept). */
  reserve(count: number): void {
    if (count <= this.start.length) return;
    let capacity = this.start.length;
    while (capacity < count) capacity *= 2;
    this.start = new Int32Array(capacity);
    this.len = new Int32Array(capacity);
    this.prev = new Int32Array(capacity);
    this.next = new Int32Array(capacity);
    this.id = new Int32Array(capacity);
  }
}

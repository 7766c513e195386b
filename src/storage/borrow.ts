// Run-time borrow rules (DESIGN.md "Owner and borrows"): TypeScript has no borrow checker, so every owner
// (a Tensor, or an AllocationGroup for all of its slots) carries a BorrowNode, and every borrow token
// (a registered view, view-mut, or prepared access) is a child node. The rules are RefCell's, applied as a
// tree so a view-mut can lend itself out again:
//   - a node with an exclusive child lends nothing else and cannot be used itself;
//   - an exclusive child needs a node with no children that is itself writable;
//   - a node cannot be released while it has children (a borrow cannot outlive its reborrows);
//   - a released node fails every use with ERELEASED.
// Owners add the move state on top: a consuming call needs a node with no children, and afterwards
// every use fails with EMOVED. Nodes are plain objects with no resources; single-threaded.
import { TenonError } from '../errors.js';

export type NodeState = 'live' | 'released' | 'moved';

export class BorrowNode {
  readonly parent: BorrowNode | null;
  readonly writable: boolean;
  #shared = 0;
  /** Live exclusive children: 0, 1, or N after a disjoint split. */
  #exclusive = 0;
  #state: NodeState = 'live';

  constructor(parent: BorrowNode | null, writable: boolean) {
    this.parent = parent;
    this.writable = writable;
  }

  get state(): NodeState {
    return this.#state;
  }

  get children(): number {
    return this.#shared + this.#exclusive;
  }

  get hasExclusiveChild(): boolean {
    return this.#exclusive > 0;
  }

  /** Throws unless this node may be read through now. */
  checkRead(op: string): void {
    this.#checkLive(op);
    if (this.#exclusive > 0) throw busy(op, 'exclusively-borrowed');
  }

  /** Throws unless this node may be written through now. */
  checkWrite(op: string): void {
    this.#checkLive(op);
    if (!this.writable) throw new TenonError('EACCES', 'a shared borrow cannot write', { op, reason: 'read-only-borrow' });
    if (this.children > 0) throw busy(op, this.#exclusive > 0 ? 'exclusively-borrowed' : 'shared-borrowed');
  }

  /** Throws unless this owner node may be consumed now. */
  checkConsume(op: string): void {
    this.#checkLive(op);
    if (this.children > 0) throw busy(op, this.#exclusive > 0 ? 'exclusively-borrowed' : 'shared-borrowed');
  }

  /** Registers a shared child (a view or a prepared read). */
  lendShared(op: string): BorrowNode {
    this.checkRead(op);
    this.#shared++;
    return new BorrowNode(this, false);
  }

  /** Registers the one exclusive child (a view-mut or a prepared write). */
  lendExclusive(op: string): BorrowNode {
    this.checkWrite(op);
    this.#exclusive = 1;
    return new BorrowNode(this, true);
  }

  /**
   * Registers `count` exclusive children at once (AllocationGroup.splitMut): the caller has proven that
   * they reach disjoint bytes. The node stays exclusively lent until every child is released.
   */
  lendDisjoint(count: number, op: string): BorrowNode[] {
    this.checkWrite(op);
    this.#exclusive = count;
    return Array.from({ length: count }, () => new BorrowNode(this, true));
  }

  /** Ends this borrow and returns it to its parent. */
  release(op: string): void {
    this.#checkLive(op);
    if (this.children > 0) throw busy(op, 'reborrowed');
    this.#state = 'released';
    if (this.parent !== null) this.parent.#returnChild(this.writable);
  }

  /** Marks an owner node consumed. Caller has already run checkConsume. */
  markMoved(): void {
    this.#state = 'moved';
  }

  #returnChild(exclusive: boolean): void {
    if (exclusive) this.#exclusive--;
    else this.#shared--;
  }

  #checkLive(op: string): void {
    if (this.#state === 'moved') throw new TenonError('EMOVED', 'value was moved by an earlier consuming call', { op });
    if (this.#state === 'released') throw new TenonError('ERELEASED', 'borrow was already released', { op });
    // A borrow whose owner was consumed cannot exist (consuming needs no children); check the chain
    // anyway so an unregistered asView() of a moved owner reports EMOVED.
    if (this.parent !== null && this.parent.#state !== 'live') this.parent.#checkLive(op);
  }
}

function busy(op: string, reason: string): TenonError {
  return new TenonError('EBUSY', 'a conflicting borrow is alive', { op, reason });
}

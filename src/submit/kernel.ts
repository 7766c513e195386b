// What the graph compiler, the runtime and the pool need from a kernel: exactly the op library's OpDef
// (src/submit/ops/types.ts), one interface for both. Type-only.
import type { AnyTypedArray } from '../storage/index.js';
import type { OpDef } from './ops/types.js';

export type Kernel<P> = OpDef<P, readonly AnyTypedArray[]>;
export type { OpAccess as KernelAccess, OpBinding as KernelBinding, OpOperand as BoundShape } from './ops/types.js';

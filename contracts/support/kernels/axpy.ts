// A small real kernel for the submission suites (out = alpha * x + y), with its host twin. It lets the
// G3/G5 suites drive real dispatches independently of the op library.
import { TenonError } from '../../../src/index.js';
import type { Kernel } from '../../../src/index.js';
import shader from './axpy.wgsl?raw';

export interface AxpyParams {
  readonly n: number;
  readonly alpha: number;
}

const WORKGROUP = 64;

export const axpy: Kernel<AxpyParams> = {
  name: 'test.axpy',
  shader,
  entryPoint: 'main',
  bindings: [
    { name: 'x', access: 'read', dtypes: ['f32'] },
    { name: 'y', access: 'read', dtypes: ['f32'] },
    { name: 'out', access: 'read_write', dtypes: ['f32'] },
  ],
  paramsBytes: 32,
  constants: () => ({ WORKGROUP }),
  check(shapes, p) {
    for (const s of shapes) {
      if (s.dtype !== 'f32') throw new TenonError('EINVAL', 'axpy takes f32', { op: 'axpy.check', reason: 'dtype-mismatch' });
      const size = s.shape.reduce((a, b) => a * b, 1);
      if (size !== p.n) throw new TenonError('EINVAL', 'axpy sizes differ', { op: 'axpy.check', reason: 'shape-mismatch' });
    }
  },
  params(p, offsets) {
    const bytes = new ArrayBuffer(32);
    new Uint32Array(bytes, 0, 4).set([p.n, offsets[0]!, offsets[1]!, offsets[2]!]);
    new Float32Array(bytes, 16, 1)[0] = p.alpha;
    return bytes;
  },
  workgroups(p) {
    return [Math.max(1, Math.ceil(p.n / WORKGROUP)), 1, 1];
  },
  host(p, [x, y, out]) {
    for (let i = 0; i < p.n; i++) out![i] = p.alpha * x![i]! + y![i]!;
  },
};

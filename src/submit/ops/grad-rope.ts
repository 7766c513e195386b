// rope_grad: the gradient of rope, in place over dx [count, heads * headDim] (shaders/rope_grad.wgsl):
// each pair turns by minus the forward's angle (a rotation's transpose), with rope's parameters, checks,
// f32 frequency table and pairing styles.
import shader from '../../../shaders/rope_grad.wgsl?raw';
import { LINEAR_WORKGROUP, linearDispatch } from './common.js';
import { rope, ropeTable } from './rope.js';
import type { RopeParams } from './rope.js';
import type { OpDef } from './types.js';

export const ropeGrad: OpDef<RopeParams, readonly [dx: Float32Array]> = {
  name: 'rope_grad',
  shader,
  entryPoint: 'main',
  bindings: rope.bindings,
  paramsBytes: rope.paramsBytes,
  check(operands, p) {
    rope.check(operands, p);
  },
  params(p, offsets) {
    return rope.params(p, offsets);
  },
  constants(p) {
    return rope.constants(p);
  },
  workgroups(p, limits) {
    return linearDispatch('rope_grad', (p.count * p.heads * p.headDim) / 2, LINEAR_WORKGROUP, limits);
  },
  host(p, [x]) {
    const { count, heads, headDim } = p;
    const half = headDim / 2;
    const neox = p.style === 'neox';
    const freq = ropeTable(p);
    for (let t = 0; t < count; t++) {
      const pos = p.pos0 + t;
      for (let h = 0; h < heads; h++) {
        const head = t * heads * headDim + h * headDim;
        for (let i = 0; i < half; i++) {
          const angle = Math.fround(pos * freq[i]!);
          const cos = Math.cos(angle);
          const sin = Math.sin(angle);
          const a = neox ? head + i : head + 2 * i;
          const b = neox ? a + half : a + 1;
          const d0 = x[a]!;
          const d1 = x[b]!;
          x[a] = d0 * cos + d1 * sin;
          x[b] = d1 * cos - d0 * sin;
        }
      }
    }
  },
};

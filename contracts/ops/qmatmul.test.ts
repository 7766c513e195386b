// Op suite: qmatmul across kinds (src/submit/ops/qmatmul.ts). The per-kind property suites are
// contracts/ops/qmatmul-<kind>.test.ts (shared body in qmatmul-suite.ts). Plan here: (1) variant
// selection follows the device's features and WGSL language features; (2) check() rejects K off the
// block grid, a weight of the wrong row width or dtype, bad sizes and unknown kinds with EINVAL.
import { describe, expect, it } from 'vitest';
import { zeros } from '../../src/index.js';
import { loweringKind } from '../../src/model/index.js';
import { QMATMUL, qmatmulOp, qmatmulVariant, selectQMatmul } from '../../src/submit/ops/index.js';
import type { PackedKind } from '../../src/submit/ops/index.js';
import { expectCode } from '../support/expect-error.js';
import { operandOf } from '../support/run-op.js';
import { useWebGPU } from './harness.js';

describe('qmatmul: variant selection and operand checks', () => {
  const gpu = useWebGPU();

  it('[OPS-qmatmul] variant selection: subgroups exactly when the device has the feature and WGSL has subgroup_id', () => {
    const p = gpu();
    const expected = p.device.features.has('subgroups') && p.wgslLanguageFeatures.has('subgroup_id') ? 'subgroups' : 'plain';
    expect(qmatmulVariant(p)).toBe(expected);
    expect(selectQMatmul('Q4_K', p)).toBe(QMATMUL.Q4_K[expected]);
    const none = { device: { features: new Set<string>() }, wgslLanguageFeatures: new Set(['subgroup_id']) };
    const noId = { device: { features: new Set(['subgroups']) }, wgslLanguageFeatures: new Set<string>() };
    const both = { device: { features: new Set(['subgroups']) }, wgslLanguageFeatures: new Set(['subgroup_id']) };
    expect([qmatmulVariant(none), qmatmulVariant(noId), qmatmulVariant(both)]).toEqual(['plain', 'plain', 'subgroups']);
  });

  it('[OPS-check] qmatmul rejects K off the block grid, a weight of the wrong row width or dtype, and bad sizes with EINVAL', async () => {
    const p = gpu();
    const q = loweringKind('Q8_0').geometry([4, 64]);
    const x = await zeros(p, 'f32', [1, 64]);
    const w = await zeros(p, 'u32', [4, q.packedRowWords]);
    const wWide = await zeros(p, 'u32', [4, q.packedRowWords + 1]);
    const wF32 = await zeros(p, 'f32', [4, q.packedRowWords]);
    const out = await zeros(p, 'f32', [1, 4]);
    const op = QMATMUL.Q8_0.plain;
    try {
      op.check([x, w, out].map(operandOf), { m: 1, n: 4, k: 64 });
      expectCode(() => op.check([x, w, out].map(operandOf), { m: 1, n: 4, k: 48 }), 'EINVAL', 'bad-param');
      expectCode(() => op.check([x, wWide, out].map(operandOf), { m: 1, n: 4, k: 64 }), 'EINVAL', 'shape-mismatch');
      expectCode(() => op.check([x, wF32, out].map(operandOf), { m: 1, n: 4, k: 64 }), 'EINVAL', 'dtype-mismatch');
      expectCode(() => op.check([x, w, out].map(operandOf), { m: 0, n: 4, k: 64 }), 'EINVAL', 'bad-param');
      expectCode(() => qmatmulOp('Q5_K' as PackedKind), 'EINVAL', 'bad-param');
    } finally {
      for (const t of [x, w, wWide, wF32, out]) t.dispose();
    }
  });
});

// Register-tile choice of the matmul kernels (shaders/matmul.wgsl, shaders/matmul_nt.wgsl), shared by
// the three matmul ops. Measured on SwiftShader through Dawn (2 cores): the 8 x 8 tile with 16 x 4
// workgroups ran 1024^3 at ~3.4-3.6 GFLOP/s (a one-output-per-invocation kernel: ~0.3); for M = 1
// decode a 1 x 8 tile in 32 x 1 workgroups was fastest (a workgroup reduction over K was ~30x slower);
// small M in between run best with the smallest power of two >= M rows per invocation.

/** Output columns per invocation (fixed in the WGSL). */
export const TILE_N = 8;

/** Rows per invocation for M rows: 1, 2, 4 or 8 (the TM override constant). */
export function rowsPerInvocation(m: number): 1 | 2 | 4 | 8 {
  if (m <= 1) return 1;
  if (m <= 2) return 2;
  if (m <= 4) return 4;
  return 8;
}

export interface MatmulTiling {
  readonly TM: number;
  readonly WG_X: number;
  readonly WG_Y: number;
}

/** Override constants for M rows. */
export function matmulTiling(m: number): MatmulTiling {
  const TM = rowsPerInvocation(m);
  return TM === 8 ? { TM, WG_X: 16, WG_Y: 4 } : { TM, WG_X: 32, WG_Y: 1 };
}

/** Workgroup counts [x (column tiles), y (row tiles), z (batch)] before limit checks. */
export function matmulGroups(m: number, n: number, batch: number): readonly [number, number, number] {
  const t = matmulTiling(m);
  return [Math.ceil(n / (TILE_N * t.WG_X)), Math.ceil(m / (t.TM * t.WG_Y)), batch];
}

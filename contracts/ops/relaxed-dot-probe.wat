;; The relaxed integer dot products alone, for contracts/ops/wasm-quant-relaxed-dot.test.ts (assembled by
;; scripts/wat.ts like the kernels; the functions exist only in the relaxed build). Operands at 0 (a) and
;; 16 (b), the accumulator at 32 (c); results at 48.
(module
  (import "env" "memory" (memory 1))
  ;; relaxed-only: begin
  (func (export "dot16")
    (v128.store offset=48 (i32.const 0) (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load (i32.const 0)) (v128.load offset=16 (i32.const 0)))))
  (func (export "dot32")
    (v128.store offset=48 (i32.const 0)
      (i32x4.relaxed_dot_i8x16_i7x16_add_s (v128.load (i32.const 0)) (v128.load offset=16 (i32.const 0)) (v128.load offset=32 (i32.const 0)))))
  ;; relaxed-only: end
)

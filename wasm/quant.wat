;; Packed-weight kernels of the host provider (WebAssembly 128-bit SIMD): the fast twins of the qmatmul
;; host references (src/submit/ops/qmatmul.ts) over the packed row layout of
;; src/submit/ops/qmatmul-layout.ts (read that header for the planes of each kind). Assembled at build
;; time by scripts/wat.ts; driven by src/submit/wasm/ops.ts.
;;
;; ABI: pointers are byte addresses in the imported memory (where every tensor of the host provider
;; lives); `kind` is PACKED_KIND_ID (src/submit/ops/qunit.ts): F32 0, F16 1, BF16 2, Q8_0 3, Q4_0 4,
;; Q4_K 5, Q6_K 6, Q4_1 7, Q5_0 8, Q5_1 9; p0, p1, p2 are the byte offsets of planes 1..3 in a row.
;;
;; A row is dequantized in registers, 16 elements per step, with GGML's f32 operations (each product
;; and sum rounded to f32 exactly as decodePackedRow rounds them, so a dequantized row is bit-identical
;; to the reference's), into a scratch row of K floats; every row of x is then dotted with it by `dot`
;; (imported from wasm/f32.wat: f32 lanes, like the GPU kernels). One dequantization serves all M rows.
(module
  (import "env" "memory" (memory 1))
  (import "env" "dot" (func $dot (param i32 i32 i32) (result f32)))

  ;; 2^112: scales the bits of a half, shifted into an f32's place, to the half's value (normals and
  ;; subnormals alike, exactly).
  (global $HALF_SCALE f32 (f32.const 0x1p112))

  ;; f32 value of the IEEE binary16 bits in the low 16 bits of $h (every pattern: subnormals, infinities,
  ;; NaN), exactly.
  (func $half (param $h i32) (result f32)
    (local $sign i32)
    (local.set $sign (i32.shl (i32.and (local.get $h) (i32.const 0x8000)) (i32.const 16)))
    (if (i32.eq (i32.and (local.get $h) (i32.const 0x7c00)) (i32.const 0x7c00))
      (then (return (f32.reinterpret_i32 (i32.or (local.get $sign)
        (i32.or (i32.const 0x7f800000) (i32.shl (i32.and (local.get $h) (i32.const 0x3ff)) (i32.const 13))))))))
    (f32.reinterpret_i32 (i32.or (local.get $sign)
      (i32.reinterpret_f32 (f32.mul (f32.reinterpret_i32 (i32.shl (i32.and (local.get $h) (i32.const 0x7fff)) (i32.const 13)))
        (global.get $HALF_SCALE))))))

  ;; The same for four halves, one in the low 16 bits of each i32 lane.
  (func $half4 (param $h v128) (result v128)
    (local $sign v128) (local $finite v128) (local $special v128) (local $isSpecial v128)
    (local.set $sign (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x8000))) (i32.const 16)))
    (local.set $finite (f32x4.mul (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x7fff))) (i32.const 13))
      (f32x4.splat (global.get $HALF_SCALE))))
    (local.set $special (v128.or (i32x4.splat (i32.const 0x7f800000))
      (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x3ff))) (i32.const 13))))
    (local.set $isSpecial (i32x4.eq (v128.and (local.get $h) (i32x4.splat (i32.const 0x7c00))) (i32x4.splat (i32.const 0x7c00))))
    (v128.or (local.get $sign) (v128.bitselect (local.get $special) (local.get $finite) (local.get $isSpecial))))

  ;; The f16 of block $b in the half plane at $plane.
  (func $block_half (param $plane i32) (param $b i32) (result f32)
    (call $half (i32.load16_u (i32.add (local.get $plane) (i32.shl (local.get $b) (i32.const 1))))))

  ;; out[0..16) = q * d for the 16 signed bytes q of $v (exact: |q| < 2^8, one rounding per product).
  (func $store16 (param $v v128) (param $out i32) (param $d v128)
    (local $lo v128) (local $hi v128)
    (local.set $lo (i16x8.extend_low_i8x16_s (local.get $v)))
    (local.set $hi (i16x8.extend_high_i8x16_s (local.get $v)))
    (v128.store (local.get $out) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $lo))) (local.get $d)))
    (v128.store offset=16 (local.get $out) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $lo))) (local.get $d)))
    (v128.store offset=32 (local.get $out) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $hi))) (local.get $d)))
    (v128.store offset=48 (local.get $out) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $hi))) (local.get $d))))

  ;; out[0..16) = q * d + m (the product rounded, then the sum: GGML's order).
  (func $store16_affine (param $v v128) (param $out i32) (param $d v128) (param $m v128)
    (local $lo v128) (local $hi v128)
    (local.set $lo (i16x8.extend_low_i8x16_s (local.get $v)))
    (local.set $hi (i16x8.extend_high_i8x16_s (local.get $v)))
    (v128.store (local.get $out)
      (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $lo))) (local.get $d)) (local.get $m)))
    (v128.store offset=16 (local.get $out)
      (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $lo))) (local.get $d)) (local.get $m)))
    (v128.store offset=32 (local.get $out)
      (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $hi))) (local.get $d)) (local.get $m)))
    (v128.store offset=48 (local.get $out)
      (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $hi))) (local.get $d)) (local.get $m))))

  ;; The fifth bits of a 32-element block as 0x10 bytes: for elements 0..15 (bytes 0, 1 of $qh) when $high
  ;; is 0, for elements 16..31 (bytes 2, 3) when it is 1. Lane e takes byte e / 8 of qh and bit e mod 8.
  (func $fifth_bits (param $qh i32) (param $high i32) (result v128)
    (local $bytes v128)
    (local.set $bytes (i8x16.swizzle (i32x4.splat (local.get $qh))
      (select (v128.const i8x16 2 2 2 2 2 2 2 2 3 3 3 3 3 3 3 3) (v128.const i8x16 0 0 0 0 0 0 0 0 1 1 1 1 1 1 1 1) (local.get $high))))
    (v128.and (i8x16.eq (v128.and (local.get $bytes) (v128.const i8x16 1 2 4 8 16 32 64 128 1 2 4 8 16 32 64 128))
        (v128.const i8x16 1 2 4 8 16 32 64 128 1 2 4 8 16 32 64 128))
      (i8x16.splat (i32.const 0x10))))

  ;; F16 / BF16 rows: k halves, two per word, eight per step; $bf selects bfloat16 (bits << 16).
  (func $dequant_halves (param $w i32) (param $out i32) (param $k i32) (param $bf i32)
    (local $end8 i32) (local $end i32) (local $v v128) (local $lo v128) (local $hi v128) (local $h i32)
    (local.set $end8 (i32.add (local.get $w) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 1))))
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $k) (i32.const 1))))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $w) (local.get $end8)))
        (local.set $v (v128.load (local.get $w)))
        (local.set $lo (i32x4.extend_low_i16x8_u (local.get $v)))
        (local.set $hi (i32x4.extend_high_i16x8_u (local.get $v)))
        (if (local.get $bf)
          (then
            (v128.store (local.get $out) (i32x4.shl (local.get $lo) (i32.const 16)))
            (v128.store offset=16 (local.get $out) (i32x4.shl (local.get $hi) (i32.const 16))))
          (else
            (v128.store (local.get $out) (call $half4 (local.get $lo)))
            (v128.store offset=16 (local.get $out) (call $half4 (local.get $hi)))))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (br $step8)))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $h (i32.load16_u (local.get $w)))
        (f32.store (local.get $out)
          (if (result f32) (local.get $bf)
            (then (f32.reinterpret_i32 (i32.shl (local.get $h) (i32.const 16))))
            (else (call $half (local.get $h)))))
        (local.set $w (i32.add (local.get $w) (i32.const 2)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $tail))))

  ;; Q8_0: 32 int8 per block (quant plane), d in the half plane at p0.
  (func $dequant_q8_0 (param $w i32) (param $out i32) (param $blocks i32) (param $p0 i32)
    (local $b i32) (local $q i32) (local $d v128)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $d (f32x4.splat (call $block_half (i32.add (local.get $w) (local.get $p0)) (local.get $b))))
        (local.set $q (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 5))))
        (call $store16 (v128.load (local.get $q)) (local.get $out) (local.get $d))
        (call $store16 (v128.load offset=16 (local.get $q)) (i32.add (local.get $out) (i32.const 64)) (local.get $d))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Q4_0, Q4_1, Q5_0, Q5_1: 16 nibble bytes per block; byte j holds element j (low nibble) and j + 16
  ;; (high nibble). Q4_0: (q - 8) d, d in the half plane at p0. Q4_1: q d + m, d and m in the word at
  ;; p0. Q5_0: (q - 16) d with the fifth bits in the qh word at p0, d in the half plane at p1. Q5_1:
  ;; q d + m, qh at p0, d and m at p1.
  (func $dequant_nibbles (param $kind i32) (param $w i32) (param $out i32) (param $blocks i32) (param $p0 i32) (param $p1 i32)
    (local $b i32) (local $v v128) (local $lo v128) (local $hi v128) (local $d v128) (local $m v128) (local $dm i32) (local $qh i32)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $v (v128.load (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 4)))))
        (local.set $lo (v128.and (local.get $v) (i8x16.splat (i32.const 0x0f))))
        (local.set $hi (i8x16.shr_u (local.get $v) (i32.const 4)))
        (block $kinds
          (block $q5_1
            (block $q5_0
              (block $q4_1
                (block $q4_0
                  (br_table $q4_0 $q4_1 $q5_0 $q5_1 $kinds
                    (select (i32.const 0)
                      (select (i32.const 1) (select (i32.const 2) (i32.const 3) (i32.eq (local.get $kind) (i32.const 8)))
                        (i32.eq (local.get $kind) (i32.const 7)))
                      (i32.eq (local.get $kind) (i32.const 4)))))
                ;; Q4_0
                (local.set $d (f32x4.splat (call $block_half (i32.add (local.get $w) (local.get $p0)) (local.get $b))))
                (call $store16 (i8x16.sub (local.get $lo) (i8x16.splat (i32.const 8))) (local.get $out) (local.get $d))
                (call $store16 (i8x16.sub (local.get $hi) (i8x16.splat (i32.const 8))) (i32.add (local.get $out) (i32.const 64)) (local.get $d))
                (br $kinds))
              ;; Q4_1
              (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.shl (local.get $b) (i32.const 2)))))
              (local.set $d (f32x4.splat (call $half (local.get $dm))))
              (local.set $m (f32x4.splat (call $half (i32.shr_u (local.get $dm) (i32.const 16)))))
              (call $store16_affine (local.get $lo) (local.get $out) (local.get $d) (local.get $m))
              (call $store16_affine (local.get $hi) (i32.add (local.get $out) (i32.const 64)) (local.get $d) (local.get $m))
              (br $kinds))
            ;; Q5_0
            (local.set $qh (i32.load (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.shl (local.get $b) (i32.const 2)))))
            (local.set $d (f32x4.splat (call $block_half (i32.add (local.get $w) (local.get $p1)) (local.get $b))))
            (call $store16 (i8x16.sub (v128.or (local.get $lo) (call $fifth_bits (local.get $qh) (i32.const 0))) (i8x16.splat (i32.const 16)))
              (local.get $out) (local.get $d))
            (call $store16 (i8x16.sub (v128.or (local.get $hi) (call $fifth_bits (local.get $qh) (i32.const 1))) (i8x16.splat (i32.const 16)))
              (i32.add (local.get $out) (i32.const 64)) (local.get $d))
            (br $kinds))
          ;; Q5_1
          (local.set $qh (i32.load (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.shl (local.get $b) (i32.const 2)))))
          (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 2)))))
          (local.set $d (f32x4.splat (call $half (local.get $dm))))
          (local.set $m (f32x4.splat (call $half (i32.shr_u (local.get $dm) (i32.const 16)))))
          (call $store16_affine (v128.or (local.get $lo) (call $fifth_bits (local.get $qh) (i32.const 0))) (local.get $out) (local.get $d) (local.get $m))
          (call $store16_affine (v128.or (local.get $hi) (call $fifth_bits (local.get $qh) (i32.const 1)))
            (i32.add (local.get $out) (i32.const 64)) (local.get $d) (local.get $m)))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Byte $i of the 12 packed Q4_K scale bytes at $sc.
  (func $byte (param $sc i32) (param $i i32) (result i32)
    (i32.load8_u (i32.add (local.get $sc) (local.get $i))))

  ;; Q4_K's 6-bit scale (which = 0) or min (which = 1) of sub-block $s (0..7): sub-blocks 0..3 keep theirs
  ;; in the low 6 bits of bytes s (scale) and s + 4 (min); 4..7 keep the low 4 bits in byte s + 4 (scale
  ;; low nibble, min high nibble) and the top 2 bits in the top bits of bytes s - 4 (scale) and s (min).
  (func $q4k_scale_min (param $sc i32) (param $s i32) (param $which i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $s) (i32.const 4))
      (then (i32.and (call $byte (local.get $sc) (i32.add (local.get $s) (i32.shl (local.get $which) (i32.const 2)))) (i32.const 63)))
      (else
        (i32.or
          (i32.and (i32.shr_u (call $byte (local.get $sc) (i32.add (local.get $s) (i32.const 4))) (i32.shl (local.get $which) (i32.const 2))) (i32.const 15))
          (i32.shl (i32.shr_u (call $byte (local.get $sc) (i32.sub (local.get $s) (i32.sub (i32.const 4) (i32.shl (local.get $which) (i32.const 2))))) (i32.const 6))
            (i32.const 4))))))

  ;; Q4_K: 256-element super-blocks of 8 sub-blocks of 32. Byte 32c + l of the 128 quant bytes holds
  ;; element 64c + l (low nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block 2c + 1). Scales
  ;; at p0 (12 bytes per block), d and dmin at p1 (a word per block). Value (d sc) q - (dmin m).
  (func $dequant_q4_k (param $w i32) (param $out i32) (param $blocks i32) (param $p0 i32) (param $p1 i32)
    (local $b i32) (local $c i32) (local $q i32) (local $sc i32) (local $dm i32) (local $d f32) (local $dmin f32)
    (local $d1 v128) (local $m1 v128) (local $d2 v128) (local $m2 v128) (local $v v128) (local $half i32) (local $o i32)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 2)))))
        (local.set $d (call $half (local.get $dm)))
        (local.set $dmin (call $half (i32.shr_u (local.get $dm) (i32.const 16))))
        (local.set $sc (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.mul (local.get $b) (i32.const 12))))
        (local.set $c (i32.const 0))
        (block $chunksDone
          (loop $chunk
            (br_if $chunksDone (i32.ge_u (local.get $c) (i32.const 4)))
            (local.set $d1 (f32x4.splat (f32.mul (local.get $d)
              (f32.convert_i32_u (call $q4k_scale_min (local.get $sc) (i32.shl (local.get $c) (i32.const 1)) (i32.const 0))))))
            (local.set $m1 (f32x4.splat (f32.neg (f32.mul (local.get $dmin)
              (f32.convert_i32_u (call $q4k_scale_min (local.get $sc) (i32.shl (local.get $c) (i32.const 1)) (i32.const 1)))))))
            (local.set $d2 (f32x4.splat (f32.mul (local.get $d)
              (f32.convert_i32_u (call $q4k_scale_min (local.get $sc) (i32.add (i32.shl (local.get $c) (i32.const 1)) (i32.const 1)) (i32.const 0))))))
            (local.set $m2 (f32x4.splat (f32.neg (f32.mul (local.get $dmin)
              (f32.convert_i32_u (call $q4k_scale_min (local.get $sc) (i32.add (i32.shl (local.get $c) (i32.const 1)) (i32.const 1)) (i32.const 1)))))))
            (local.set $q (i32.add (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))) (i32.shl (local.get $c) (i32.const 5))))
            (local.set $o (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 8))))
            (local.set $half (i32.const 0))
            (block $halvesDone
              (loop $halves
                (br_if $halvesDone (i32.ge_u (local.get $half) (i32.const 32)))
                (local.set $v (v128.load (i32.add (local.get $q) (local.get $half))))
                (call $store16_affine (v128.and (local.get $v) (i8x16.splat (i32.const 0x0f)))
                  (i32.add (local.get $o) (i32.shl (local.get $half) (i32.const 2))) (local.get $d1) (local.get $m1))
                (call $store16_affine (i8x16.shr_u (local.get $v) (i32.const 4))
                  (i32.add (i32.add (local.get $o) (i32.const 128)) (i32.shl (local.get $half) (i32.const 2))) (local.get $d2) (local.get $m2))
                (local.set $half (i32.add (local.get $half) (i32.const 16)))
                (br $halves)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $chunk)))
        (local.set $out (i32.add (local.get $out) (i32.const 1024)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Q6_K: 256-element super-blocks in two halves of 128. For half h and l in 0..31, with a = ql[64h + l],
  ;; c = ql[64h + 32 + l], hi = qh[32h + l] and s = 8h + l / 16, elements 128h + l (+32, +64, +96) are the
  ;; 6-bit values (a low | hi bits 0-1), (c low | hi bits 2-3), (a high | hi bits 4-5), (c high | hi bits
  ;; 6-7), minus 32, times d * scale[s (+2, +4, +6)]. ql: 128 bytes per block; qh at p0 (64 per block);
  ;; int8 scales at p1 (16 per block); d in the half plane at p2.
  (func $dequant_q6_k (param $w i32) (param $out i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (local $b i32) (local $h i32) (local $l i32) (local $d f32) (local $ql i32) (local $qh i32) (local $sc i32)
    (local $a v128) (local $c v128) (local $hi v128) (local $s i32) (local $o i32)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $d (call $block_half (i32.add (local.get $w) (local.get $p2)) (local.get $b)))
        (local.set $sc (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))
        (local.set $h (i32.const 0))
        (block $halvesDone
          (loop $halves
            (br_if $halvesDone (i32.ge_u (local.get $h) (i32.const 2)))
            (local.set $ql (i32.add (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))) (i32.shl (local.get $h) (i32.const 6))))
            (local.set $qh (i32.add (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.shl (local.get $b) (i32.const 6))) (i32.shl (local.get $h) (i32.const 5))))
            (local.set $l (i32.const 0))
            (block $lanesDone
              (loop $lanes
                (br_if $lanesDone (i32.ge_u (local.get $l) (i32.const 32)))
                (local.set $a (v128.load (i32.add (local.get $ql) (local.get $l))))
                (local.set $c (v128.load offset=32 (i32.add (local.get $ql) (local.get $l))))
                (local.set $hi (v128.load (i32.add (local.get $qh) (local.get $l))))
                (local.set $s (i32.add (local.get $sc) (i32.add (i32.shl (local.get $h) (i32.const 3)) (i32.shr_u (local.get $l) (i32.const 4)))))
                (local.set $o (i32.add (local.get $out) (i32.shl (i32.add (i32.shl (local.get $h) (i32.const 7)) (local.get $l)) (i32.const 2))))
                (call $store16
                  (i8x16.sub (v128.or (v128.and (local.get $a) (i8x16.splat (i32.const 0x0f)))
                    (i8x16.shl (v128.and (local.get $hi) (i8x16.splat (i32.const 0x03))) (i32.const 4))) (i8x16.splat (i32.const 32)))
                  (local.get $o)
                  (f32x4.splat (f32.mul (local.get $d) (f32.convert_i32_s (i32.load8_s (local.get $s))))))
                (call $store16
                  (i8x16.sub (v128.or (v128.and (local.get $c) (i8x16.splat (i32.const 0x0f)))
                    (i8x16.shl (v128.and (local.get $hi) (i8x16.splat (i32.const 0x0c))) (i32.const 2))) (i8x16.splat (i32.const 32)))
                  (i32.add (local.get $o) (i32.const 128))
                  (f32x4.splat (f32.mul (local.get $d) (f32.convert_i32_s (i32.load8_s offset=2 (local.get $s))))))
                (call $store16
                  (i8x16.sub (v128.or (i8x16.shr_u (local.get $a) (i32.const 4))
                    (v128.and (local.get $hi) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32)))
                  (i32.add (local.get $o) (i32.const 256))
                  (f32x4.splat (f32.mul (local.get $d) (f32.convert_i32_s (i32.load8_s offset=4 (local.get $s))))))
                (call $store16
                  (i8x16.sub (v128.or (i8x16.shr_u (local.get $c) (i32.const 4))
                    (v128.and (i8x16.shr_u (local.get $hi) (i32.const 2)) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32)))
                  (i32.add (local.get $o) (i32.const 384))
                  (f32x4.splat (f32.mul (local.get $d) (f32.convert_i32_s (i32.load8_s offset=6 (local.get $s))))))
                (local.set $l (i32.add (local.get $l) (i32.const 16)))
                (br $lanes)))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $halves)))
        (local.set $out (i32.add (local.get $out) (i32.const 1024)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Dequantizes one packed row of k elements of `kind` at $w into k floats at $out (F32 rows are copied).
  (func $dequant_row (export "dequant_row") (param $kind i32) (param $w i32) (param $out i32) (param $k i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (block $done
      (block $q6_k
        (block $q4_k
          (block $nibbles
            (block $q8_0
              (block $halves
                (block $f32
                  (br_table $f32 $halves $halves $q8_0 $nibbles $q4_k $q6_k $nibbles $nibbles $nibbles $done (local.get $kind)))
                (memory.copy (local.get $out) (local.get $w) (i32.shl (local.get $k) (i32.const 2)))
                (br $done))
              (call $dequant_halves (local.get $w) (local.get $out) (local.get $k) (i32.eq (local.get $kind) (i32.const 2)))
              (br $done))
            (call $dequant_q8_0 (local.get $w) (local.get $out) (i32.shr_u (local.get $k) (i32.const 5)) (local.get $p0))
            (br $done))
          (call $dequant_nibbles (local.get $kind) (local.get $w) (local.get $out) (i32.shr_u (local.get $k) (i32.const 5)) (local.get $p0) (local.get $p1))
          (br $done))
        (call $dequant_q4_k (local.get $w) (local.get $out) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1))
        (br $done))
      (call $dequant_q6_k (local.get $w) (local.get $out) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1) (local.get $p2))))

  ;; qmatmul: out[M, N] = x[M, K] . W^T for packed rows of $rowBytes bytes. Each row of W is dequantized
  ;; once into $scratch (K floats) and dotted with every row of x.
  (func (export "qmatmul") (param $kind i32) (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $scratch i32)
    (local $i i32) (local $j i32) (local $kBytes i32) (local $nBytes i32)
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (call $dequant_row (local.get $kind) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (local.get $scratch)
          (local.get $k) (local.get $p0) (local.get $p1) (local.get $p2))
        (local.set $i (i32.const 0))
        (block $xDone
          (loop $xs
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
              (call $dot (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes))) (local.get $scratch) (local.get $k)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xs)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))
)

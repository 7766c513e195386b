;; Packed-weight kernels of the host provider (WebAssembly 128-bit SIMD): the fast twins of the qmatmul
;; host references (src/submit/ops/qmatmul.ts) over the packed row layout of
;; src/submit/ops/qmatmul-layout.ts (read that header for the planes of each kind). Assembled at build
;; time by scripts/wat.ts; driven by src/submit/wasm/ops.ts.
;;
;; ABI: pointers are byte addresses in the imported memory (where every tensor of the host provider
;; lives); `kind` is PACKED_KIND_ID (src/submit/ops/qunit.ts): F32 0, F16 1, BF16 2, Q8_0 3, Q4_0 4,
;; Q4_K 5, Q6_K 6, Q4_1 7, Q5_0 8, Q5_1 9; p0, p1, p2 are the byte offsets of planes 1..3 in a row.
;;
;; The block kinds (Q8_0 .. Q5_1) in two phases per weight row, in the "groups" form: every kind's row is
;; K small integers in groups of 16, each group with an f32 scale (GGML's own f32 product, e.g. d * sc
;; for the k-quants) and, for the affine kinds (Q4_1, Q5_1, Q4_K), an f32 min, so that element e of group
;; g is q_e * scale_g (+ min_g) exactly as GGML's dequantizer rounds it.
;;   1. $decode_row writes the row's groups into scratch: K signed bytes (Q8_0's quant plane is already
;;      that form and is read in place), K / 16 scales, K / 16 mins. Byte operations on 16 values at once.
;;   2. $dot_groups dots each row of x with the groups, the scale factored out of each group:
;;      sum_g scale_g * (sum_e x_e q_e) (+ min_g * sum_e x_e, the x sums computed once per call). The
;;      integers become f32 in registers, never in memory.
;; One decoded row serves all M rows of x, and the arithmetic of out[i, j] does not depend on M or on
;; which other rows share the call (so a weight split across bindings sums exactly as the unsplit one).
;; F16 and BF16 rows are dotted straight from the packed halves ($dot_halves); Q8_0, Q4_0, Q4_K and Q6_K
;; rows are unpacked in registers and dotted where they lie ($fused_rows, $q4_k_rows, $q6_k_rows), which
;; costs less than writing and rereading the groups form; Q4_1, Q5_0 and Q5_1 take the two phases.
;; `dequant_row` expands the groups form to floats (the tests compare it bit for bit with decodePackedRow).
;;
;; Accumulation is f32 in four lanes, as in wasm/f32.wat; lane sums are combined at the end by $hsum.
(module
  (import "env" "memory" (memory 1))

  ;; 2^112: scales the bits of a half, shifted into an f32's place, to the half's value (normals and
  ;; subnormals alike, exactly). Used where halves are weights ($finite_half4 and the F16 dot).
  (global $HALF_SCALE f32 (f32.const 0x1p112))
  ;; |x| below 2^16 keeps 2^112 * x finite (f32's largest is just under 2^128): $dot_halves4's bound.
  (global $HALF_X_BOUND f32 (f32.const 0x1p16))
  ;; The exact decoders of scales ($half, $half4) never form a subnormal f32: an x86 core takes a slow
  ;; microcode assist (~100 cycles) for each operation with one, and Q4_K / Q6_K super-block scales are
  ;; often subnormal halves. Normal halves: the bits shifted into place plus the exponent bias difference
  ;; (127 - 15, in the exponent field: HALF_REBIAS); subnormal halves: mantissa * 2^-24 (HALF_SUB_UNIT),
  ;; an integer below 1024 times a power of two, exact and a normal f32 (or zero).
  (global $HALF_REBIAS i32 (i32.const 0x38000000))
  (global $HALF_SUB_UNIT f32 (f32.const 0x1p-24))

  ;; The sum of the four lanes of v: (l0 + l1) + (l2 + l3).
  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; f32 value of the IEEE binary16 bits in the low 16 bits of $h (every pattern: subnormals, infinities,
  ;; NaN), exactly.
  (func $half (param $h i32) (result f32)
    (local $sign i32) (local $e i32)
    (local.set $sign (i32.shl (i32.and (local.get $h) (i32.const 0x8000)) (i32.const 16)))
    (local.set $e (i32.and (local.get $h) (i32.const 0x7c00)))
    (if (i32.eq (local.get $e) (i32.const 0x7c00))
      (then (return (f32.reinterpret_i32 (i32.or (local.get $sign)
        (i32.or (i32.const 0x7f800000) (i32.shl (i32.and (local.get $h) (i32.const 0x3ff)) (i32.const 13))))))))
    (if (i32.eqz (local.get $e))
      (then (return (f32.reinterpret_i32 (i32.or (local.get $sign)
        (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (i32.and (local.get $h) (i32.const 0x3ff))) (global.get $HALF_SUB_UNIT))))))))
    (f32.reinterpret_i32 (i32.or (local.get $sign)
      (i32.add (i32.shl (i32.and (local.get $h) (i32.const 0x7fff)) (i32.const 13)) (global.get $HALF_REBIAS)))))

  ;; The same for four halves, one in the low 16 bits of each i32 lane (every pattern).
  (func $half4 (param $h v128) (result v128)
    (local $sign v128) (local $finite v128) (local $special v128) (local $isSpecial v128) (local $e v128)
    (local.set $sign (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x8000))) (i32.const 16)))
    (local.set $e (v128.and (local.get $h) (i32x4.splat (i32.const 0x7c00))))
    (local.set $finite (v128.bitselect
      (f32x4.mul (f32x4.convert_i32x4_s (v128.and (local.get $h) (i32x4.splat (i32.const 0x3ff)))) (f32x4.splat (global.get $HALF_SUB_UNIT)))
      (i32x4.add (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x7fff))) (i32.const 13)) (i32x4.splat (global.get $HALF_REBIAS)))
      (i32x4.eq (local.get $e) (i32x4.splat (i32.const 0)))))
    (local.set $special (v128.or (i32x4.splat (i32.const 0x7f800000))
      (i32x4.shl (v128.and (local.get $h) (i32x4.splat (i32.const 0x3ff))) (i32.const 13))))
    (local.set $isSpecial (i32x4.eq (local.get $e) (i32x4.splat (i32.const 0x7c00))))
    (v128.or (local.get $sign) (v128.bitselect (local.get $special) (local.get $finite) (local.get $isSpecial))))

  ;; Four finite halves (no exponent of all ones), each sign-extended into an i32 lane: shifted left 13,
  ;; the sign lands in bit 31 (and copies of it in 28..30, masked off) and exponent and mantissa in 13..27,
  ;; a float 2^-112 times the half's value, which the product with 2^112 restores exactly.
  (func $finite_half4 (param $h v128) (result v128)
    (f32x4.mul (v128.and (i32x4.shl (local.get $h) (i32.const 13)) (i32x4.splat (i32.const 0x8fffe000)))
      (f32x4.splat (global.get $HALF_SCALE))))

  ;; True when any of the eight halves of $v has the exponent of all ones (infinity or NaN).
  (func $any_special8 (param $v v128) (result i32)
    (v128.any_true (i16x8.eq (v128.and (local.get $v) (i16x8.splat (i32.const 0x7c00))) (i16x8.splat (i32.const 0x7c00)))))

  ;; The f16 of block $b in the half plane at $plane.
  (func $block_half (param $plane i32) (param $b i32) (result f32)
    (call $half (i32.load16_u (i32.add (local.get $plane) (i32.shl (local.get $b) (i32.const 1))))))

  ;; Stores f32 $v at $at and $at + 4 (the scale or min of the two groups of a 32-element block).
  (func $store2 (param $at i32) (param $v f32)
    (f32.store (local.get $at) (local.get $v))
    (f32.store offset=4 (local.get $at) (local.get $v)))

  ;; ---- Phase 1: a packed row into the groups form ----

;; Scale pairs: the f16 of block b (the half plane at $plane) into $ss[2b] and $ss[2b + 1], four blocks
  ;; per step through $half4 (exact for every pattern), the blocks mod 4 one at a time.
  (func $half_pairs (param $plane i32) (param $blocks i32) (param $ss i32)
    (local $b i32) (local $b4 i32) (local $f v128) (local $d f32)
    (local.set $b4 (i32.and (local.get $blocks) (i32.const -4)))
    (block $done4
      (loop $step4
        (br_if $done4 (i32.ge_u (local.get $b) (local.get $b4)))
        (local.set $f (call $half4 (i32x4.extend_low_i16x8_u
          (v128.load64_zero (i32.add (local.get $plane) (i32.shl (local.get $b) (i32.const 1)))))))
        (v128.store (i32.add (local.get $ss) (i32.shl (local.get $b) (i32.const 3)))
          (i8x16.shuffle 0 1 2 3 0 1 2 3 4 5 6 7 4 5 6 7 (local.get $f) (local.get $f)))
        (v128.store offset=16 (i32.add (local.get $ss) (i32.shl (local.get $b) (i32.const 3)))
          (i8x16.shuffle 8 9 10 11 8 9 10 11 12 13 14 15 12 13 14 15 (local.get $f) (local.get $f)))
        (local.set $b (i32.add (local.get $b) (i32.const 4)))
        (br $step4)))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $d (call $block_half (local.get $plane) (local.get $b)))
        (f32.store (i32.add (local.get $ss) (i32.shl (local.get $b) (i32.const 3))) (local.get $d))
        (f32.store offset=4 (i32.add (local.get $ss) (i32.shl (local.get $b) (i32.const 3))) (local.get $d))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $step))))

  ;; Scale and min pairs of Q4_1 / Q5_1: word b of the plane at $plane holds d (low half) and min (high
  ;; half) of block b; d goes to $ss[2b], $ss[2b + 1] and min to $sm[2b], $sm[2b + 1]. Four per step.
  (func $dm_pairs (param $plane i32) (param $blocks i32) (param $ss i32) (param $sm i32)
    (local $b i32) (local $b4 i32) (local $v v128) (local $f v128) (local $dm i32) (local $at i32)
    (local.set $b4 (i32.and (local.get $blocks) (i32.const -4)))
    (block $done4
      (loop $step4
        (br_if $done4 (i32.ge_u (local.get $b) (local.get $b4)))
        (local.set $v (v128.load (i32.add (local.get $plane) (i32.shl (local.get $b) (i32.const 2)))))
        (local.set $at (i32.shl (local.get $b) (i32.const 3)))
        (local.set $f (call $half4 (v128.and (local.get $v) (i32x4.splat (i32.const 0xffff)))))
        (v128.store (i32.add (local.get $ss) (local.get $at)) (i8x16.shuffle 0 1 2 3 0 1 2 3 4 5 6 7 4 5 6 7 (local.get $f) (local.get $f)))
        (v128.store offset=16 (i32.add (local.get $ss) (local.get $at)) (i8x16.shuffle 8 9 10 11 8 9 10 11 12 13 14 15 12 13 14 15 (local.get $f) (local.get $f)))
        (local.set $f (call $half4 (i32x4.shr_u (local.get $v) (i32.const 16))))
        (v128.store (i32.add (local.get $sm) (local.get $at)) (i8x16.shuffle 0 1 2 3 0 1 2 3 4 5 6 7 4 5 6 7 (local.get $f) (local.get $f)))
        (v128.store offset=16 (i32.add (local.get $sm) (local.get $at)) (i8x16.shuffle 8 9 10 11 8 9 10 11 12 13 14 15 12 13 14 15 (local.get $f) (local.get $f)))
        (local.set $b (i32.add (local.get $b) (i32.const 4)))
        (br $step4)))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $dm (i32.load (i32.add (local.get $plane) (i32.shl (local.get $b) (i32.const 2)))))
        (local.set $at (i32.shl (local.get $b) (i32.const 3)))
        (call $store2 (i32.add (local.get $ss) (local.get $at)) (call $half (local.get $dm)))
        (call $store2 (i32.add (local.get $sm) (local.get $at)) (call $half (i32.shr_u (local.get $dm) (i32.const 16))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $step))))

  ;; Quants of Q4_0, Q4_1, Q5_0, Q5_1: 16 nibble bytes per block; byte j holds element j (low nibble, group
  ;; 2b) and j + 16 (high nibble, group 2b + 1). With $qh (the plane of the blocks' qh words, 0 for the
  ;; 4-bit kinds) bit e of block b's word is the fifth bit (16) of element e: byte e / 8, bit e mod 8.
  ;; $offset is subtracted from every value (Q4_0 8, Q5_0 16, 0 for the kinds with a min).
  (func $decode_nibbles (param $w i32) (param $blocks i32) (param $qh i32) (param $offset i32) (param $sq i32)
    (local $b i32) (local $v v128) (local $lo v128) (local $hi v128) (local $bytes v128) (local $bits v128) (local $off v128)
    (local.set $off (i8x16.splat (local.get $offset)))
    (local.set $bits (v128.const i8x16 1 2 4 8 16 32 64 128 1 2 4 8 16 32 64 128))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $v (v128.load (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 4)))))
        (local.set $lo (v128.and (local.get $v) (i8x16.splat (i32.const 0x0f))))
        (local.set $hi (i8x16.shr_u (local.get $v) (i32.const 4)))
        (if (local.get $qh)
          (then
            (local.set $bytes (i32x4.splat (i32.load (i32.add (local.get $qh) (i32.shl (local.get $b) (i32.const 2))))))
            (local.set $lo (v128.or (local.get $lo) (v128.and (i8x16.eq (v128.and (local.get $bits)
              (i8x16.swizzle (local.get $bytes) (v128.const i8x16 0 0 0 0 0 0 0 0 1 1 1 1 1 1 1 1))) (local.get $bits)) (i8x16.splat (i32.const 0x10)))))
            (local.set $hi (v128.or (local.get $hi) (v128.and (i8x16.eq (v128.and (local.get $bits)
              (i8x16.swizzle (local.get $bytes) (v128.const i8x16 2 2 2 2 2 2 2 2 3 3 3 3 3 3 3 3))) (local.get $bits)) (i8x16.splat (i32.const 0x10)))))))
        (v128.store (i32.add (local.get $sq) (i32.shl (local.get $b) (i32.const 5))) (i8x16.sub (local.get $lo) (local.get $off)))
        (v128.store offset=16 (i32.add (local.get $sq) (i32.shl (local.get $b) (i32.const 5))) (i8x16.sub (local.get $hi) (local.get $off)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Q4_K: 256-element super-blocks of 8 sub-blocks of 32. Byte 32c + l of the 128 quant bytes holds
  ;; element 64c + l (low nibble, sub-block 2c) and 64c + 32 + l (high nibble, sub-block 2c + 1). Scales
  ;; at p0 (12 bytes per block), d and dmin at p1 (a word per block). Sub-block s: scale d * sc_s, min
  ;; -(dmin * m_s) (GGML's products), for its two groups. The 6-bit sc_s and m_s: sub-blocks 0..3 keep
  ;; theirs in the low 6 bits of scale bytes s and s + 4; 4..7 keep the low 4 bits in byte s + 4 (sc low
  ;; nibble, m high nibble) and the top 2 bits in the top bits of bytes s - 4 (sc) and s (m).
  (func $decode_q4_k (param $w i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $sq i32) (param $ss i32) (param $sm i32)
    (local $b i32) (local $s i32) (local $q i32) (local $sc i32) (local $dm i32) (local $d f32) (local $dmin f32)
    (local $v0 v128) (local $v1 v128) (local $o i32) (local $g i32) (local $scale i32) (local $min i32) (local $hi4 i32) (local $f f32)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 2)))))
        (local.set $d (call $half (local.get $dm)))
        (local.set $dmin (call $half (i32.shr_u (local.get $dm) (i32.const 16))))
        (local.set $sc (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.mul (local.get $b) (i32.const 12))))
        ;; Scales and mins of the 8 sub-blocks (groups 16b + 2s and 16b + 2s + 1).
        (local.set $s (i32.const 0))
        (block $subsDone
          (loop $subs
            (br_if $subsDone (i32.ge_u (local.get $s) (i32.const 8)))
            (local.set $g (i32.shl (i32.add (i32.shl (local.get $b) (i32.const 4)) (i32.shl (local.get $s) (i32.const 1))) (i32.const 2)))
            (if (i32.lt_u (local.get $s) (i32.const 4))
              (then
                (local.set $scale (i32.and (i32.load8_u (i32.add (local.get $sc) (local.get $s))) (i32.const 63)))
                (local.set $min (i32.and (i32.load8_u offset=4 (i32.add (local.get $sc) (local.get $s))) (i32.const 63))))
              (else
                (local.set $hi4 (i32.load8_u offset=4 (i32.add (local.get $sc) (local.get $s))))
                (local.set $scale (i32.or (i32.and (local.get $hi4) (i32.const 15))
                  (i32.shl (i32.shr_u (i32.load8_u (i32.sub (i32.add (local.get $sc) (local.get $s)) (i32.const 4))) (i32.const 6)) (i32.const 4))))
                (local.set $min (i32.or (i32.shr_u (local.get $hi4) (i32.const 4))
                  (i32.shl (i32.shr_u (i32.load8_u (i32.add (local.get $sc) (local.get $s))) (i32.const 6)) (i32.const 4))))))
            (local.set $f (f32.mul (local.get $d) (f32.convert_i32_u (local.get $scale))))
            (f32.store (i32.add (local.get $ss) (local.get $g)) (local.get $f))
            (f32.store offset=4 (i32.add (local.get $ss) (local.get $g)) (local.get $f))
            (local.set $f (f32.neg (f32.mul (local.get $dmin) (f32.convert_i32_u (local.get $min)))))
            (f32.store (i32.add (local.get $sm) (local.get $g)) (local.get $f))
            (f32.store offset=4 (i32.add (local.get $sm) (local.get $g)) (local.get $f))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (br $subs)))
        ;; Quants: chunk c (32 bytes) gives sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles).
        (local.set $q (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))))
        (local.set $o (i32.add (local.get $sq) (i32.shl (local.get $b) (i32.const 8))))
        (local.set $s (i32.const 0))
        (block $chunksDone
          (loop $chunk
            (br_if $chunksDone (i32.ge_u (local.get $s) (i32.const 4)))
            (local.set $v0 (v128.load (local.get $q)))
            (local.set $v1 (v128.load offset=16 (local.get $q)))
            (v128.store (local.get $o) (v128.and (local.get $v0) (i8x16.splat (i32.const 0x0f))))
            (v128.store offset=16 (local.get $o) (v128.and (local.get $v1) (i8x16.splat (i32.const 0x0f))))
            (v128.store offset=32 (local.get $o) (i8x16.shr_u (local.get $v0) (i32.const 4)))
            (v128.store offset=48 (local.get $o) (i8x16.shr_u (local.get $v1) (i32.const 4)))
            (local.set $q (i32.add (local.get $q) (i32.const 32)))
            (local.set $o (i32.add (local.get $o) (i32.const 64)))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (br $chunk)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Q6_K: 256-element super-blocks in two halves of 128. For half h and l in 0..31, with a = ql[64h + l],
  ;; c = ql[64h + 32 + l], hi = qh[32h + l] and s = 8h + l / 16, elements 128h + l (+32, +64, +96) are the
  ;; 6-bit values (a low | hi bits 0-1), (c low | hi bits 2-3), (a high | hi bits 4-5), (c high | hi bits
  ;; 6-7), minus 32, with scale d * scale[s (+2, +4, +6)]: element group (256b + 128h + l) / 16 + 2t uses
  ;; scale s + 2t. ql: 128 bytes per block; qh at p0 (64 per block); int8 scales at p1 (16 per block); d in
  ;; the half plane at p2.
  (func $decode_q6_k (param $w i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $sq i32) (param $ss i32)
    (local $b i32) (local $h i32) (local $l i32) (local $d f32) (local $ql i32) (local $qh i32) (local $sc i32)
    (local $a v128) (local $c v128) (local $hi v128) (local $o i32) (local $i i32)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $d (call $block_half (i32.add (local.get $w) (local.get $p2)) (local.get $b)))
        (local.set $sc (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))
        ;; The 16 group scales of the block, in group order: group 16b + i uses scale byte i.
        (local.set $i (i32.const 0))
        (block $scalesDone
          (loop $scales
            (br_if $scalesDone (i32.ge_u (local.get $i) (i32.const 16)))
            (f32.store (i32.add (local.get $ss) (i32.shl (i32.add (i32.shl (local.get $b) (i32.const 4)) (local.get $i)) (i32.const 2)))
              (f32.mul (local.get $d) (f32.convert_i32_s (i32.load8_s (i32.add (local.get $sc) (local.get $i))))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $scales)))
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
                (local.set $o (i32.add (local.get $sq) (i32.add (i32.add (i32.shl (local.get $b) (i32.const 8)) (i32.shl (local.get $h) (i32.const 7))) (local.get $l))))
                (v128.store (local.get $o)
                  (i8x16.sub (v128.or (v128.and (local.get $a) (i8x16.splat (i32.const 0x0f)))
                    (i8x16.shl (v128.and (local.get $hi) (i8x16.splat (i32.const 0x03))) (i32.const 4))) (i8x16.splat (i32.const 32))))
                (v128.store offset=32 (local.get $o)
                  (i8x16.sub (v128.or (v128.and (local.get $c) (i8x16.splat (i32.const 0x0f)))
                    (i8x16.shl (v128.and (local.get $hi) (i8x16.splat (i32.const 0x0c))) (i32.const 2))) (i8x16.splat (i32.const 32))))
                (v128.store offset=64 (local.get $o)
                  (i8x16.sub (v128.or (i8x16.shr_u (local.get $a) (i32.const 4))
                    (v128.and (local.get $hi) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32))))
                (v128.store offset=96 (local.get $o)
                  (i8x16.sub (v128.or (i8x16.shr_u (local.get $c) (i32.const 4))
                    (v128.and (i8x16.shr_u (local.get $hi) (i32.const 2)) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32))))
                (local.set $l (i32.add (local.get $l) (i32.const 16)))
                (br $lanes)))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $halves)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block))))

  ;; Whether a block kind has mins (Q4_K, Q4_1, Q5_1).
  (func $affine (param $kind i32) (result i32)
    (i32.or (i32.eq (local.get $kind) (i32.const 5))
      (i32.or (i32.eq (local.get $kind) (i32.const 7)) (i32.eq (local.get $kind) (i32.const 9)))))

;; Decodes the packed row at $w (k elements of a block kind) into the groups form: scales at $ss, mins
  ;; at $sm (affine kinds), quants at $sq; returns the address of the quants ($w itself for Q8_0).
  (func $decode_row (param $kind i32) (param $w i32) (param $k i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (param $sq i32) (param $ss i32) (param $sm i32) (result i32)
    (local $blocks i32)
    (local.set $blocks (i32.shr_u (local.get $k) (i32.const 5)))
    (block $done
      (block $q5_1
        (block $q5_0
          (block $q4_1
            (block $q6_k
              (block $q4_k
                (block $q4_0
                  (block $q8_0
                    (br_table $q8_0 $q4_0 $q4_k $q6_k $q4_1 $q5_0 $q5_1 $done (i32.sub (local.get $kind) (i32.const 3))))
                  (call $half_pairs (i32.add (local.get $w) (local.get $p0)) (local.get $blocks) (local.get $ss))
                  (return (local.get $w)))
                (call $half_pairs (i32.add (local.get $w) (local.get $p0)) (local.get $blocks) (local.get $ss))
                (call $decode_nibbles (local.get $w) (local.get $blocks) (i32.const 0) (i32.const 8) (local.get $sq))
                (br $done))
              (call $decode_q4_k (local.get $w) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1) (local.get $sq) (local.get $ss) (local.get $sm))
              (br $done))
            (call $decode_q6_k (local.get $w) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1) (local.get $p2) (local.get $sq) (local.get $ss))
            (br $done))
          (call $dm_pairs (i32.add (local.get $w) (local.get $p0)) (local.get $blocks) (local.get $ss) (local.get $sm))
          (call $decode_nibbles (local.get $w) (local.get $blocks) (i32.const 0) (i32.const 0) (local.get $sq))
          (br $done))
        (call $half_pairs (i32.add (local.get $w) (local.get $p1)) (local.get $blocks) (local.get $ss))
        (call $decode_nibbles (local.get $w) (local.get $blocks) (i32.add (local.get $w) (local.get $p0)) (i32.const 16) (local.get $sq))
        (br $done))
      (call $dm_pairs (i32.add (local.get $w) (local.get $p1)) (local.get $blocks) (local.get $ss) (local.get $sm))
      (call $decode_nibbles (local.get $w) (local.get $blocks) (i32.add (local.get $w) (local.get $p0)) (i32.const 0) (local.get $sq)))
    (local.get $sq))

  ;; ---- Phase 2: rows of x dotted with the groups ----

  ;; sum over groups g of scale_g * (x_g . q_g) for an even number of groups (two per step, each with its
  ;; own accumulator): q_g is 16 signed bytes at $q + 16g, made f32 in registers; x_g . q_g is
  ;; ((x0 q0 + x1 q1) + x2 q2) + x3 q3 over its four vectors.
  (func $dot_groups (param $x i32) (param $q i32) (param $ss i32) (param $groups i32) (result f32)
    (local $end i32) (local $v v128) (local $h v128) (local $p v128) (local $acc0 v128) (local $acc1 v128)
    (local.set $end (i32.add (local.get $q) (i32.shl (local.get $groups) (i32.const 4))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $q) (local.get $end)))
        (local.set $v (v128.load (local.get $q)))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $v)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $v)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)))))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (v128.load32_splat (local.get $ss)))))
        (local.set $v (v128.load offset=16 (local.get $q)))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $v)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $v)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (v128.load32_splat offset=4 (local.get $ss)))))
        (local.set $q (i32.add (local.get $q) (i32.const 32)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $ss (i32.add (local.get $ss) (i32.const 8)))
        (br $step)))
    (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))

  ;; sum over groups g of min_g * xsum_g (mins at $sm, the sums of x's groups at $xs), in group order.
  (func $min_terms (param $sm i32) (param $xs i32) (param $groups i32) (result f32)
    (local $end i32) (local $s f32)
    (local.set $end (i32.add (local.get $sm) (i32.shl (local.get $groups) (i32.const 2))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $sm) (local.get $end)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $sm)) (f32.load (local.get $xs)))))
        (local.set $sm (i32.add (local.get $sm) (i32.const 4)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (br $step)))
    (local.get $s))

  ;; xs[g] = the sum of x's group g of 16 elements: ((x0 + x1) + (x2 + x3)) over its vectors, then $hsum.
  (func $group_sums (param $x i32) (param $xs i32) (param $groups i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $xs) (i32.shl (local.get $groups) (i32.const 2))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $xs) (local.get $end)))
        (f32.store (local.get $xs) (call $hsum (f32x4.add
          (f32x4.add (v128.load (local.get $x)) (v128.load offset=16 (local.get $x)))
          (f32x4.add (v128.load offset=32 (local.get $x)) (v128.load offset=48 (local.get $x))))))
        (local.set $x (i32.add (local.get $x) (i32.const 64)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (br $step))))

  ;; x . w for a row of k halves at $w (F16, or BF16 when $bf), eight per step into two accumulators, the
  ;; k mod 8 rest in order. F16 steps whose eight halves are all finite take $finite_half4's three
  ;; operations ($finite_half4's, inline); a step with an infinity or NaN takes the exact general decoder.
  (func $dot_halves (param $x i32) (param $w i32) (param $k i32) (param $bf i32) (result f32)
    (local $end16 i32) (local $end8 i32) (local $end i32) (local $v1 v128) (local $v v128) (local $acc0 v128) (local $acc1 v128)
    (local.set $end8 (i32.add (local.get $w) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 1))))
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $k) (i32.const 1))))
    ;; F16, sixteen halves per trip while all of them are finite: the operations of two trips of $step8's
    ;; finite path, in the same order, with one test for infinities and NaN; the first trip that has one
    ;; leaves the rest of the row to $step8.
    (if (i32.eqz (local.get $bf))
      (then
        (local.set $end16 (i32.add (local.get $w) (i32.shl (i32.and (local.get $k) (i32.const -16)) (i32.const 1))))
        (block $done16
          (loop $step16
            (br_if $done16 (i32.ge_u (local.get $w) (local.get $end16)))
            (local.set $v (v128.load (local.get $w)))
            (local.set $v1 (v128.load offset=16 (local.get $w)))
            (br_if $done16 (v128.any_true (v128.or
              (i16x8.eq (v128.and (local.get $v) (i16x8.splat (i32.const 0x7c00))) (i16x8.splat (i32.const 0x7c00)))
              (i16x8.eq (v128.and (local.get $v1) (i16x8.splat (i32.const 0x7c00))) (i16x8.splat (i32.const 0x7c00))))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $v)) (i32.const 13))
              (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))) (v128.load (local.get $x)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $v)) (i32.const 13))
              (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))) (v128.load offset=16 (local.get $x)))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $v1)) (i32.const 13))
              (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))) (v128.load offset=32 (local.get $x)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $v1)) (i32.const 13))
              (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))) (v128.load offset=48 (local.get $x)))))
            (local.set $w (i32.add (local.get $w) (i32.const 32)))
            (local.set $x (i32.add (local.get $x) (i32.const 64)))
            (br $step16)))))
    (call $halves_rest (local.get $x) (local.get $w) (local.get $end8) (local.get $end) (local.get $bf) (local.get $acc0) (local.get $acc1)))

  ;; The rest of a row of halves from $w (x at $x) after the 16-half trips: eight halves per trip up to
  ;; $end8 (any pattern: infinities and NaN through $half4), the lane sums $acc0 + $acc1 through $hsum,
  ;; then the halves up to $end one at a time. Shared by $dot_halves and $dot_halves4, so that a row's
  ;; result does not depend on which of them took it.
  (func $halves_rest (param $x i32) (param $w i32) (param $end8 i32) (param $end i32) (param $bf i32) (param $acc0 v128) (param $acc1 v128) (result f32)
    (local $v v128) (local $lo v128) (local $hi v128) (local $s f32) (local $h i32)
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $w) (local.get $end8)))
        (local.set $v (v128.load (local.get $w)))
        (if (local.get $bf)
          (then
            (local.set $lo (i32x4.shl (i32x4.extend_low_i16x8_u (local.get $v)) (i32.const 16)))
            (local.set $hi (i32x4.shl (i32x4.extend_high_i16x8_u (local.get $v)) (i32.const 16))))
          (else
            (if (v128.any_true (i16x8.eq (v128.and (local.get $v) (i16x8.splat (i32.const 0x7c00))) (i16x8.splat (i32.const 0x7c00))))
              (then
                (local.set $lo (call $half4 (i32x4.extend_low_i16x8_u (local.get $v))))
                (local.set $hi (call $half4 (i32x4.extend_high_i16x8_u (local.get $v)))))
              (else
                (local.set $lo (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $v)) (i32.const 13))
                  (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))))
                (local.set $hi (f32x4.mul (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $v)) (i32.const 13))
                  (i32x4.splat (i32.const 0x8fffe000))) (f32x4.splat (global.get $HALF_SCALE))))))))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $lo) (v128.load (local.get $x)))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $hi) (v128.load offset=16 (local.get $x)))))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (br $step8)))
    (local.set $s (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $h (i32.load16_u (local.get $w)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $x))
          (if (result f32) (local.get $bf)
            (then (f32.reinterpret_i32 (i32.shl (local.get $h) (i32.const 16))))
            (else (call $half (local.get $h)))))))
        (local.set $w (i32.add (local.get $w) (i32.const 2)))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (br $tail)))
    (local.get $s))

  ;; F16: out[r * $outStep] = x . w_r for the four rows w_r = $w + r * $stride (r = 0..3); every |x| below
  ;; 2^16 ($halves_x_fit). Each trip scales its 16 elements of x by 2^112 once for the four rows, and each
  ;; row multiplies its halves, shifted into an f32's place (w', as in $dot_halves), by them: w' * (2^112 x)
  ;; is the same real product as $dot_halves's (w' * 2^112) * x, both exact factors, rounded once, so with
  ;; the same accumulators in the same order (16-half trips, then $halves_rest) each row's result equals
  ;; $dot_halves's bit for bit, one multiply per four halves fewer. w' has $dot_halves's bits (sign in bit
  ;; 31, the half's exponent and mantissa in bits 13..27), built per eight halves from two 16-bit shifts
  ;; (the low word: v << 13; the high word: v >> 3 arithmetic, the sign copies in bits 12..14 cleared)
  ;; interleaved into four words twice, one operation fewer than widening each four first. The trips run
  ;; while all 64 halves are finite: exponent fields (v & 0x7c00) are at most 0x7c00, which only infinity
  ;; and NaN reach.
  (func $dot_halves4 (param $x i32) (param $w i32) (param $stride i32) (param $k i32) (param $out i32) (param $outStep i32)
    (local $w1 i32) (local $w2 i32) (local $w3 i32) (local $xEnd16 i32) (local $start i32) (local $e8 i32) (local $e i32) (local $expMask v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $v v128) (local $lo v128) (local $hi v128) (local $signEm v128)
    (local $a0 v128) (local $b0 v128) (local $a1 v128) (local $b1 v128) (local $a2 v128) (local $b2 v128) (local $a3 v128) (local $b3 v128)
    (local.set $w1 (i32.add (local.get $w) (local.get $stride)))
    (local.set $w2 (i32.add (local.get $w1) (local.get $stride)))
    (local.set $w3 (i32.add (local.get $w2) (local.get $stride)))
    (local.set $xEnd16 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -16)) (i32.const 2))))
    (local.set $start (local.get $w))
    (local.set $expMask (i16x8.splat (i32.const 0x7c00)))
    (local.set $signEm (i16x8.splat (i32.const 0x8fff)))
    (block $done16
      (loop $step16
        (br_if $done16 (i32.ge_u (local.get $x) (local.get $xEnd16)))
        ;; The OR of the 64 exponent fields is 0x7c00 when one of them is (and, rarely, when large finite
        ;; weights together set all five bits): only then the exact test of each field.
        (if (v128.any_true (i16x8.eq (local.get $expMask) (v128.and (local.get $expMask)
          (v128.or (v128.or (v128.or (v128.load (local.get $w)) (v128.load offset=16 (local.get $w))) (v128.or (v128.load (local.get $w1)) (v128.load offset=16 (local.get $w1))))
            (v128.or (v128.or (v128.load (local.get $w2)) (v128.load offset=16 (local.get $w2))) (v128.or (v128.load (local.get $w3)) (v128.load offset=16 (local.get $w3))))))))
          (then
            (br_if $done16 (v128.any_true (i16x8.eq (local.get $expMask)
              (i16x8.max_u (i16x8.max_u (i16x8.max_u (v128.and (v128.load (local.get $w)) (local.get $expMask)) (v128.and (v128.load offset=16 (local.get $w)) (local.get $expMask))) (i16x8.max_u (v128.and (v128.load (local.get $w1)) (local.get $expMask)) (v128.and (v128.load offset=16 (local.get $w1)) (local.get $expMask))))
                (i16x8.max_u (i16x8.max_u (v128.and (v128.load (local.get $w2)) (local.get $expMask)) (v128.and (v128.load offset=16 (local.get $w2)) (local.get $expMask))) (i16x8.max_u (v128.and (v128.load (local.get $w3)) (local.get $expMask)) (v128.and (v128.load offset=16 (local.get $w3)) (local.get $expMask))))))))))
        (local.set $x0 (f32x4.mul (v128.load (local.get $x)) (f32x4.splat (global.get $HALF_SCALE))))
        (local.set $x1 (f32x4.mul (v128.load offset=16 (local.get $x)) (f32x4.splat (global.get $HALF_SCALE))))
        (local.set $x2 (f32x4.mul (v128.load offset=32 (local.get $x)) (f32x4.splat (global.get $HALF_SCALE))))
        (local.set $x3 (f32x4.mul (v128.load offset=48 (local.get $x)) (f32x4.splat (global.get $HALF_SCALE))))
        (local.set $v (v128.load (local.get $w)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x0))))
        (local.set $b0 (f32x4.add (local.get $b0) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x1))))
        (local.set $v (v128.load offset=16 (local.get $w)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x2))))
        (local.set $b0 (f32x4.add (local.get $b0) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x3))))
        (local.set $v (v128.load (local.get $w1)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x0))))
        (local.set $b1 (f32x4.add (local.get $b1) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x1))))
        (local.set $v (v128.load offset=16 (local.get $w1)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x2))))
        (local.set $b1 (f32x4.add (local.get $b1) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x3))))
        (local.set $v (v128.load (local.get $w2)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x0))))
        (local.set $b2 (f32x4.add (local.get $b2) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x1))))
        (local.set $v (v128.load offset=16 (local.get $w2)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x2))))
        (local.set $b2 (f32x4.add (local.get $b2) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x3))))
        (local.set $v (v128.load (local.get $w3)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x0))))
        (local.set $b3 (f32x4.add (local.get $b3) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x1))))
        (local.set $v (v128.load offset=16 (local.get $w3)))
        (local.set $lo (i16x8.shl (local.get $v) (i32.const 13)))
        (local.set $hi (v128.and (i16x8.shr_s (local.get $v) (i32.const 3)) (local.get $signEm)))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $lo) (local.get $hi)) (local.get $x2))))
        (local.set $b3 (f32x4.add (local.get $b3) (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $lo) (local.get $hi)) (local.get $x3))))
        (local.set $x (i32.add (local.get $x) (i32.const 64)))
        (local.set $w (i32.add (local.get $w) (i32.const 32)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 32)))
        (local.set $w2 (i32.add (local.get $w2) (i32.const 32)))
        (local.set $w3 (i32.add (local.get $w3) (i32.const 32)))
        (br $step16)))
    ;; Each row's ends, as byte offsets from where its pointer now stands (all four moved alike).
    (local.set $e8 (i32.sub (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 1)) (i32.sub (local.get $w) (local.get $start))))
    (local.set $e (i32.sub (i32.shl (local.get $k) (i32.const 1)) (i32.sub (local.get $w) (local.get $start))))
    (f32.store (local.get $out)
      (call $halves_rest (local.get $x) (local.get $w) (i32.add (local.get $w) (local.get $e8)) (i32.add (local.get $w) (local.get $e))
        (i32.const 0) (local.get $a0) (local.get $b0)))
    (f32.store (i32.add (local.get $out) (local.get $outStep))
      (call $halves_rest (local.get $x) (local.get $w1) (i32.add (local.get $w1) (local.get $e8)) (i32.add (local.get $w1) (local.get $e))
        (i32.const 0) (local.get $a1) (local.get $b1)))
    (f32.store (i32.add (local.get $out) (i32.shl (local.get $outStep) (i32.const 1)))
      (call $halves_rest (local.get $x) (local.get $w2) (i32.add (local.get $w2) (local.get $e8)) (i32.add (local.get $w2) (local.get $e))
        (i32.const 0) (local.get $a2) (local.get $b2)))
    (f32.store (i32.add (local.get $out) (i32.mul (local.get $outStep) (i32.const 3)))
      (call $halves_rest (local.get $x) (local.get $w3) (i32.add (local.get $w3) (local.get $e8)) (i32.add (local.get $w3) (local.get $e))
        (i32.const 0) (local.get $a3) (local.get $b3))))

    ;; 1 when every one of the $count floats at $x is below 2^16 in magnitude (or NaN), else 0: then x times
  ;; 2^112 ($dot_halves4's scaled x) is finite, and w' * (2^112 * x) rounds the same real product as
  ;; (w' * 2^112) * x ($dot_halves), w' being a half's value times 2^-112 (exact, a power-of-two scale).
  (func $halves_x_fit (param $x i32) (param $count i32) (result i32)
    (local $end4 i32) (local $end i32) (local $big v128) (local $bound v128)
    (local.set $bound (f32x4.splat (global.get $HALF_X_BOUND)))
    (local.set $end4 (i32.add (local.get $x) (i32.shl (i32.and (local.get $count) (i32.const -4)) (i32.const 2))))
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $count) (i32.const 2))))
    (block $done4
      (loop $step
        (br_if $done4 (i32.ge_u (local.get $x) (local.get $end4)))
        (local.set $big (v128.or (local.get $big) (f32x4.ge (f32x4.abs (v128.load (local.get $x))) (local.get $bound))))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (br $step)))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (if (f32.ge (f32.abs (f32.load (local.get $x))) (global.get $HALF_X_BOUND)) (then (return (i32.const 0))))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (br $tail)))
    (i32.eqz (v128.any_true (local.get $big))))

;; ---- Fused dots of Q8_0 and Q4_0 rows (no groups form in scratch) ----

  ;; x . w for one Q4_0 row of $blocks blocks whose quants are read where they lie (16 nibble bytes per
  ;; block at $w); $dp holds the row's scale pairs ($half_pairs: f32, 8 bytes per block). Per block the 16 low nibbles (group 2b) and the
  ;; 16 high nibbles (group 2b + 1) become q - 8 as bytes, then f32 in registers; each group's four
  ;; products are summed in order, times the block's scale, into its own accumulator (as $dot_groups
  ;; does with the decoded row, so both forms give the same sum).
  (func $dot_q4_0 (param $x i32) (param $w i32) (param $blocks i32) (param $dp i32) (result f32)
    (local $end i32) (local $v v128) (local $lo v128) (local $hi v128) (local $h v128) (local $p v128) (local $d v128)
    (local $acc0 v128) (local $acc1 v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $blocks) (i32.const 4))))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $v (v128.load (local.get $w)))
        (local.set $lo (i8x16.sub (v128.and (local.get $v) (i8x16.splat (i32.const 0x0f))) (i8x16.splat (i32.const 8))))
        (local.set $hi (i8x16.sub (i8x16.shr_u (local.get $v) (i32.const 4)) (i8x16.splat (i32.const 8))))
        (local.set $d (v128.load32_splat (local.get $dp)))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $lo)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $lo)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)))))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (local.get $d))))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $hi)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $hi)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (local.get $d))))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $dp (i32.add (local.get $dp) (i32.const 8)))
        (br $block)))
    (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))

  ;; x . w for one Q8_0 row: 32 signed bytes per block at $w (groups 2b and 2b + 1), scale pairs at $dp; the arithmetic of $dot_q4_0 with the bytes as they are.
  (func $dot_q8_0 (param $x i32) (param $w i32) (param $blocks i32) (param $dp i32) (result f32)
    (local $end i32) (local $v v128) (local $h v128) (local $p v128) (local $d v128) (local $acc0 v128) (local $acc1 v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $blocks) (i32.const 5))))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $d (v128.load32_splat (local.get $dp)))
        (local.set $v (v128.load (local.get $w)))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $v)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $v)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $x)))))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (local.get $d))))
        (local.set $v (v128.load offset=16 (local.get $w)))
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $v)))
        (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=64 (local.get $x))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=80 (local.get $x)))))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $v)))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=96 (local.get $x)))))
        (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=112 (local.get $x)))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (local.get $d))))
        (local.set $w (i32.add (local.get $w) (i32.const 32)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $dp (i32.add (local.get $dp) (i32.const 8)))
        (br $block)))
    (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))

  ;; out[i, j] = x_i . w_j for Q8_0 ($kind 3) or Q4_0 (4) rows whose quants are dotted where they lie
  ;; (decode and prefill alike: unpacking nibbles in registers costs less than writing and rereading a
  ;; decoded row); only the scale pairs of the row go to $ss (scratch, K / 4 bytes).
  (func $fused_rows (param $kind i32) (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $ss i32)
    (local $i i32) (local $j i32) (local $row i32) (local $blocks i32) (local $kBytes i32) (local $nBytes i32) (local $xi i32)
    (local.set $blocks (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $row (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))))
        (call $half_pairs (i32.add (local.get $row) (local.get $p0)) (local.get $blocks) (local.get $ss))
        (local.set $i (i32.const 0))
        (block $xDone
          (loop $xRows
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (local.set $xi (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes))))
            (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
              (if (result f32) (i32.eq (local.get $kind) (i32.const 4))
                (then (call $dot_q4_0 (local.get $xi) (local.get $row) (local.get $blocks) (local.get $ss)))
                (else (call $dot_q8_0 (local.get $xi) (local.get $row) (local.get $blocks) (local.get $ss)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xRows)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))

  ;; ---- Fused Q4_K rows (the default kernel: f32 x, no groups form in scratch) ----

  ;; xs[s] = the lanes of x's sub-block s of 32 elements: ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))
  ;; over its eight vectors (16 bytes per sub-block, $subs of them).
  (func $sub_sums (param $x i32) (param $xs i32) (param $subs i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $xs) (i32.shl (local.get $subs) (i32.const 4))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $xs) (local.get $end)))
        (v128.store (local.get $xs) (f32x4.add
          (f32x4.add (f32x4.add (v128.load (local.get $x)) (v128.load offset=16 (local.get $x)))
            (f32x4.add (v128.load offset=32 (local.get $x)) (v128.load offset=48 (local.get $x))))
          (f32x4.add (f32x4.add (v128.load offset=64 (local.get $x)) (v128.load offset=80 (local.get $x)))
            (f32x4.add (v128.load offset=96 (local.get $x)) (v128.load offset=112 (local.get $x))))))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 16)))
        (br $step))))

  ;; x . w for one Q4_K row of $blocks super-blocks at $w, the quants unpacked in registers: sub-block s
  ;; of super-block b (elements 256b + 32s ..) has scale d * sc_s and min -(dmin * m_s) (GGML's products;
  ;; the 6-bit sc_s and m_s of all 8 sub-blocks unpacked at once as $dot_q4_k_q8x does, the 16 products
  ;; to $f, 64 bytes). Its two groups of 16 go in as acc += (group dot) * scale (even groups in acc0, odd
  ;; in acc1; a group's dot is ((q0 x0 + q1 x1) + q2 x2) + q3 x3 over its four vectors, as $dot_groups), its min as accm += (x's lane sums of the sub-block, $xs) * min; the result is the lane sum
  ;; of (acc0 + acc1) + accm.
  (func $dot_q4_k (param $x i32) (param $xs i32) (param $w i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $f i32) (result f32)
    (local $b i32) (local $c i32) (local $dm i32) (local $qp i32) (local $fs i32)
    (local $r v128) (local $a v128) (local $u v128) (local $v0 v128) (local $v1 v128) (local $sc v128) (local $q v128) (local $h v128) (local $p v128)
    (local $acc0 v128) (local $acc1 v128) (local $accm v128)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 2)))))
        (local.set $r (v128.load (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.mul (local.get $b) (i32.const 12)))))
        (local.set $a (i8x16.swizzle (local.get $r) (v128.const i8x16 0 1 2 3 8 9 10 11 4 5 6 7 8 9 10 11)))
        (local.set $a (v128.bitselect (i8x16.shr_u (local.get $a) (i32.const 4))
          (v128.and (local.get $a) (v128.const i8x16 63 63 63 63 15 15 15 15 63 63 63 63 0 0 0 0))
          (v128.const i8x16 0 0 0 0 0 0 0 0 0 0 0 0 -1 -1 -1 -1)))
        (local.set $r (v128.or (local.get $a) (i8x16.shl (i8x16.shr_u
          (i8x16.swizzle (local.get $r) (v128.const i8x16 16 16 16 16 0 1 2 3 16 16 16 16 4 5 6 7)) (i32.const 6)) (i32.const 4))))
        (local.set $sc (f32x4.splat (call $half (local.get $dm))))
        (local.set $u (i16x8.extend_low_i8x16_u (local.get $r)))
        (v128.store (local.get $f) (f32x4.mul (local.get $sc) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $u)))))
        (v128.store offset=16 (local.get $f) (f32x4.mul (local.get $sc) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $u)))))
        (local.set $sc (f32x4.splat (call $half (i32.shr_u (local.get $dm) (i32.const 16)))))
        (local.set $u (i16x8.extend_high_i8x16_u (local.get $r)))
        (v128.store offset=32 (local.get $f) (f32x4.neg (f32x4.mul (local.get $sc) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $u))))))
        (v128.store offset=48 (local.get $f) (f32x4.neg (f32x4.mul (local.get $sc) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $u))))))
        ;; Chunk c: sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles).
        (local.set $qp (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))))
        (local.set $fs (local.get $f))
        (local.set $c (i32.const 0))
        (block $chunksDone
          (loop $chunks
            (br_if $chunksDone (i32.ge_u (local.get $c) (i32.const 4)))
            (local.set $v0 (v128.load (local.get $qp)))
            (local.set $v1 (v128.load offset=16 (local.get $qp)))
            (local.set $sc (v128.load32_splat (local.get $fs)))
            (local.set $q (v128.and (local.get $v0) (i8x16.splat (i32.const 0x0f))))
            (local.set $h (i16x8.extend_low_i8x16_u (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load (local.get $x))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=16 (local.get $x)))))
            (local.set $h (i16x8.extend_high_i8x16_u (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=32 (local.get $x)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=48 (local.get $x)))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (local.get $sc))))
            (local.set $q (v128.and (local.get $v1) (i8x16.splat (i32.const 0x0f))))
            (local.set $h (i16x8.extend_low_i8x16_u (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=64 (local.get $x))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=80 (local.get $x)))))
            (local.set $h (i16x8.extend_high_i8x16_u (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=96 (local.get $x)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=112 (local.get $x)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (local.get $sc))))
            (local.set $accm (f32x4.add (local.get $accm) (f32x4.mul (v128.load (local.get $xs)) (v128.load32_splat offset=32 (local.get $fs)))))
            (local.set $sc (v128.load32_splat offset=4 (local.get $fs)))
            (local.set $q (i8x16.shr_u (local.get $v0) (i32.const 4)))
            (local.set $h (i16x8.extend_low_i8x16_u (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=128 (local.get $x))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=144 (local.get $x)))))
            (local.set $h (i16x8.extend_high_i8x16_u (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=160 (local.get $x)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=176 (local.get $x)))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (local.get $sc))))
            (local.set $q (i8x16.shr_u (local.get $v1) (i32.const 4)))
            (local.set $h (i16x8.extend_low_i8x16_u (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=192 (local.get $x))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=208 (local.get $x)))))
            (local.set $h (i16x8.extend_high_i8x16_u (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $h))) (v128.load offset=224 (local.get $x)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $h))) (v128.load offset=240 (local.get $x)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (local.get $sc))))
            (local.set $accm (f32x4.add (local.get $accm) (f32x4.mul (v128.load offset=16 (local.get $xs)) (v128.load32_splat offset=36 (local.get $fs)))))
            (local.set $qp (i32.add (local.get $qp) (i32.const 32)))
            (local.set $x (i32.add (local.get $x) (i32.const 256)))
            (local.set $xs (i32.add (local.get $xs) (i32.const 32)))
            (local.set $fs (i32.add (local.get $fs) (i32.const 8)))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $chunks)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (call $hsum (f32x4.add (f32x4.add (local.get $acc0) (local.get $acc1)) (local.get $accm))))

  ;; out[i, j] = x_i . w_j for Q4_K rows ($dot_q4_k). Scratch: 64 bytes of factors at $f; at $xs, per row of
  ;; x its sub-block lane sums (K / 2 bytes).
  (func $q4_k_rows (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $p1 i32) (param $f i32) (param $xs i32)
    (local $i i32) (local $j i32) (local $row i32) (local $subs i32) (local $kBytes i32) (local $nBytes i32) (local $subBytes i32)
    (local.set $subs (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $subBytes (i32.shl (local.get $subs) (i32.const 4)))
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (block $sumsDone
      (loop $sums
        (br_if $sumsDone (i32.ge_u (local.get $i) (local.get $m)))
        (call $sub_sums (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
          (i32.add (local.get $xs) (i32.mul (local.get $i) (local.get $subBytes))) (local.get $subs))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $sums)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $row (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))))
        (local.set $i (i32.const 0))
        (block $xDone
          (loop $xRows
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
              (call $dot_q4_k (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
                (i32.add (local.get $xs) (i32.mul (local.get $i) (local.get $subBytes)))
                (local.get $row) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1) (local.get $f)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xRows)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))

  ;; ---- Fused Q6_K rows (the default kernel: f32 x, no groups form in scratch) ----

  ;; x . w for one Q6_K row of $blocks super-blocks at $w: the 6-bit values unpacked in registers as
  ;; $decode_q6_k unpacks them; group t of step (h, l) (elements 256b + 128h + l + 32t .. + 15) has scale
  ;; d * scale byte 8h + l / 16 + 2t (GGML's product; the four of a step formed in one vector). Each group
  ;; goes in as acc += (((q0 x0 + q1 x1) + q2 x2) + q3 x3) * scale, groups t = 0, 2 in acc0 and 1, 3 in
  ;; acc1, in the order b, h, l, t; the result is the lane sum of acc0 + acc1.
  (func $dot_q6_k (param $x i32) (param $w i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $p2 i32) (result f32)
    (local $b i32) (local $step i32) (local $h2 i32) (local $l i32) (local $ql i32) (local $qh i32) (local $xe i32)
    (local $d v128) (local $fs v128) (local $qa v128) (local $qc v128) (local $qhi v128) (local $q v128) (local $h v128) (local $p v128)
    (local $acc0 v128) (local $acc1 v128)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $d (f32x4.splat (call $block_half (i32.add (local.get $w) (local.get $p2)) (local.get $b))))
        (local.set $step (i32.const 0))
        (block $stepsDone
          (loop $steps
            (br_if $stepsDone (i32.ge_u (local.get $step) (i32.const 4)))
            ;; step = 2h + l / 16.
            (local.set $h2 (i32.shr_u (local.get $step) (i32.const 1)))
            (local.set $l (i32.shl (i32.and (local.get $step) (i32.const 1)) (i32.const 4)))
            (local.set $ql (i32.add (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))) (i32.add (i32.shl (local.get $h2) (i32.const 6)) (local.get $l))))
            (local.set $qh (i32.add (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.shl (local.get $b) (i32.const 6)))
              (i32.add (i32.shl (local.get $h2) (i32.const 5)) (local.get $l))))
            (local.set $q (v128.load64_zero (i32.add (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4)))
              (i32.add (i32.shl (local.get $h2) (i32.const 3)) (i32.shr_u (local.get $l) (i32.const 4))))))
            (local.set $fs (f32x4.mul (local.get $d)
              (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $q) (i32.const 8)) (i32.const 8))))))
            (local.set $qa (v128.load (local.get $ql)))
            (local.set $qc (v128.load offset=32 (local.get $ql)))
            (local.set $qhi (v128.load (local.get $qh)))
            ;; x of element 256b + 128h + l + 32t at $xe + 128t.
            (local.set $xe (i32.add (local.get $x)
              (i32.shl (i32.add (i32.add (i32.shl (local.get $b) (i32.const 8)) (i32.shl (local.get $h2) (i32.const 7))) (local.get $l)) (i32.const 2))))
            (local.set $q (i8x16.sub (v128.or (v128.and (local.get $qa) (i8x16.splat (i32.const 0x0f))) (i8x16.shl (v128.and (local.get $qhi) (i8x16.splat (i32.const 0x03))) (i32.const 4))) (i8x16.splat (i32.const 32))))
            (local.set $h (i16x8.extend_low_i8x16_s (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load (local.get $xe))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $xe)))))
            (local.set $h (i16x8.extend_high_i8x16_s (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $xe)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $xe)))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (i8x16.shuffle 0 1 2 3 0 1 2 3 0 1 2 3 0 1 2 3 (local.get $fs) (local.get $fs)))))
            (local.set $q (i8x16.sub (v128.or (v128.and (local.get $qc) (i8x16.splat (i32.const 0x0f))) (i8x16.shl (v128.and (local.get $qhi) (i8x16.splat (i32.const 0x0c))) (i32.const 2))) (i8x16.splat (i32.const 32))))
            (local.set $h (i16x8.extend_low_i8x16_s (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=128 (local.get $xe))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=144 (local.get $xe)))))
            (local.set $h (i16x8.extend_high_i8x16_s (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=160 (local.get $xe)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=176 (local.get $xe)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (i8x16.shuffle 4 5 6 7 4 5 6 7 4 5 6 7 4 5 6 7 (local.get $fs) (local.get $fs)))))
            (local.set $q (i8x16.sub (v128.or (i8x16.shr_u (local.get $qa) (i32.const 4)) (v128.and (local.get $qhi) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32))))
            (local.set $h (i16x8.extend_low_i8x16_s (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=256 (local.get $xe))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=272 (local.get $xe)))))
            (local.set $h (i16x8.extend_high_i8x16_s (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=288 (local.get $xe)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=304 (local.get $xe)))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (local.get $p) (i8x16.shuffle 8 9 10 11 8 9 10 11 8 9 10 11 8 9 10 11 (local.get $fs) (local.get $fs)))))
            (local.set $q (i8x16.sub (v128.or (i8x16.shr_u (local.get $qc) (i32.const 4)) (v128.and (i8x16.shr_u (local.get $qhi) (i32.const 2)) (i8x16.splat (i32.const 0x30)))) (i8x16.splat (i32.const 32))))
            (local.set $h (i16x8.extend_low_i8x16_s (local.get $q)))
            (local.set $p (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=384 (local.get $xe))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=400 (local.get $xe)))))
            (local.set $h (i16x8.extend_high_i8x16_s (local.get $q)))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=416 (local.get $xe)))))
            (local.set $p (f32x4.add (local.get $p) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=432 (local.get $xe)))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $p) (i8x16.shuffle 12 13 14 15 12 13 14 15 12 13 14 15 12 13 14 15 (local.get $fs) (local.get $fs)))))
            (local.set $step (i32.add (local.get $step) (i32.const 1)))
            (br $steps)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))

  ;; out[i, j] = x_i . w_j for Q6_K rows ($dot_q6_k); no scratch.
  (func $q6_k_rows (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (local $i i32) (local $j i32) (local $row i32) (local $kBytes i32) (local $nBytes i32)
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $row (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))))
        (local.set $i (i32.const 0))
        (block $xDone
          (loop $xRows
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
              (call $dot_q6_k (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
                (local.get $row) (i32.shr_u (local.get $k) (i32.const 8)) (local.get $p0) (local.get $p1) (local.get $p2)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xRows)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))

  ;; ---- The q8-activation kernels (a separate choice: hostKernels 'wasm-q8', never the default) ----
  ;; relaxed-simd: off (scripts/wat.ts leaves these as written: their results equal the scalar twin's bit for bit)
  ;; As GGML's vec_dot for Q8_0, Q4_0, Q4_K and Q6_K weights does, x is first quantized once per call to blocks of 32
  ;; signed 8-bit values with one f32 scale each, and each block's dot product is then an exact integer
  ;; sum (i32x4.dot_i16x8_s), made f32 once per block. Faster, but x carries a rounding error of up to
  ;; half its block's scale per element: results differ from the f32 kernels (the scalar twin
  ;; src/submit/wasm/q8-activation.ts gives them bit for bit).
  ;; Lanes: every 16 consecutive elements (of a block of x, a Q6_K group) are split over the four lanes
  ;; as elements 4l .. 4l + 3 to lane l, so x is stored as 16-bit values in the order "even elements,
  ;; then odd elements" per 16: weights unpacked straight into 16-bit lanes by shifts (a byte's two
  ;; nibbles, a byte pair's two bytes) then meet their x in one i32x4.dot_i16x8_s each, with no
  ;; byte-to-halfword extends.
  ;; The relaxed build has its own quantizer and dot products (one source: the build-only lines of
  ;; scripts/wat.ts): x as 8-bit values in element order (32 bytes per block, then the i32x4 four-element
  ;; sums of the block's two halves), and each 16 elements' products by relaxed SIMD's
  ;; i16x8.relaxed_dot_i8x16_i7x16_s (16 multiply-adds per instruction, bytes stay bytes) with x the signed
  ;; operand and the weights' unsigned form the 0..127 one (Q4_0 and Q4_K nibbles 0..15, Q6_K 6-bit values
  ;; 0..63: no lane can saturate, 2 * 63 * 127 < 32767), then i32x4.extadd_pairwise_i16x8_s: lane l again
  ;; sums elements 4l .. 4l + 3, and an offset is taken off once per block or group from x's sums (Q4_0:
  ;; 8 sum x, Q6_K: 32 sum x), so every lane holds the same exact integer as in the plain build and the f32
  ;; steps after it are the same: bit for bit the scalar twin's results. Q8_0 weights are signed (no 0..127
  ;; operand; widening x's bytes in the kernel measured slower): Q8_0 keeps the 16-bit layout and kernel.
  ;; (Not i32x4.relaxed_dot_i8x16_i7x16_add_s: Node 20's V8 (11.3, x64) computes it wrongly, twice the
  ;; product with the accumulator ignored, while the i16x8 form is exact; checked by
  ;; scripts/relaxed-dot-check.mjs.)

  ;; Quantizes one row of $k elements of x (k a multiple of 32) at $x: per block b, amax = max |x_e|,
  ;; d = amax / 127, id = 1 / d (0 when d is 0), q_e = nearest(x_e * id) (ties to even). Writes the q_e as
  ;; i16 (64 bytes per block: elements 0, 2, .. 14, then 1, 3, .. 15, then 16, 18, .. 30, then 17, 19, .. 31)
  ;; at $xq, d (f32) at $xd + 4b and the block's total sum q_e (f32, exact) at $xs + 4b.
  (func $quantize_x16 (param $x i32) (param $k i32) (param $xq i32) (param $xd i32) (param $xs i32)
    (local $end i32) (local $m v128) (local $amax f32) (local $d f32) (local $id v128) (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128)
    (local $e0 v128) (local $o0 v128) (local $e1 v128) (local $o1 v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2))))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $m (f32x4.max
          (f32x4.max (f32x4.max (f32x4.abs (v128.load (local.get $x))) (f32x4.abs (v128.load offset=16 (local.get $x))))
            (f32x4.max (f32x4.abs (v128.load offset=32 (local.get $x))) (f32x4.abs (v128.load offset=48 (local.get $x)))))
          (f32x4.max (f32x4.max (f32x4.abs (v128.load offset=64 (local.get $x))) (f32x4.abs (v128.load offset=80 (local.get $x))))
            (f32x4.max (f32x4.abs (v128.load offset=96 (local.get $x))) (f32x4.abs (v128.load offset=112 (local.get $x)))))))
        (local.set $amax (f32.max (f32.max (f32x4.extract_lane 0 (local.get $m)) (f32x4.extract_lane 1 (local.get $m)))
          (f32.max (f32x4.extract_lane 2 (local.get $m)) (f32x4.extract_lane 3 (local.get $m)))))
        (local.set $d (f32.div (local.get $amax) (f32.const 127)))
        (local.set $id (f32x4.splat (select (f32.div (f32.const 1) (local.get $d)) (f32.const 0) (f32.ne (local.get $d) (f32.const 0)))))
        (f32.store (local.get $xd) (local.get $d))
        (local.set $q0 (call $q16 (local.get $x) (local.get $id)))
        (local.set $q1 (call $q16 (i32.add (local.get $x) (i32.const 32)) (local.get $id)))
        (local.set $q2 (call $q16 (i32.add (local.get $x) (i32.const 64)) (local.get $id)))
        (local.set $q3 (call $q16 (i32.add (local.get $x) (i32.const 96)) (local.get $id)))
        (local.set $e0 (call $evens (local.get $q0) (local.get $q1)))
        (local.set $o0 (call $odds (local.get $q0) (local.get $q1)))
        (local.set $e1 (call $evens (local.get $q2) (local.get $q3)))
        (local.set $o1 (call $odds (local.get $q2) (local.get $q3)))
        (v128.store (local.get $xq) (local.get $e0))
        (v128.store offset=16 (local.get $xq) (local.get $o0))
        (v128.store offset=32 (local.get $xq) (local.get $e1))
        (v128.store offset=48 (local.get $xq) (local.get $o1))
        ;; The block's total, exact, as f32.
        (local.set $e0 (i32x4.add
          (i32x4.add (i32x4.extadd_pairwise_i16x8_s (local.get $e0)) (i32x4.extadd_pairwise_i16x8_s (local.get $o0)))
          (i32x4.add (i32x4.extadd_pairwise_i16x8_s (local.get $e1)) (i32x4.extadd_pairwise_i16x8_s (local.get $o1)))))
        (f32.store (local.get $xs) (f32.convert_i32_s (i32.add (i32.add (i32x4.extract_lane 0 (local.get $e0)) (i32x4.extract_lane 1 (local.get $e0)))
          (i32.add (i32x4.extract_lane 2 (local.get $e0)) (i32x4.extract_lane 3 (local.get $e0))))))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
        (local.set $xd (i32.add (local.get $xd) (i32.const 4)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (br $block))))

  ;; relaxed-only: begin
  ;; The relaxed build's quantizer (not for Q8_0): the same q_e, d and block totals, the q_e as i8 in element order (32 bytes per
  ;; block at $xq), then 32 times the block's pair sums (i16x8: lane i = 32 (q_2i + q_2i+1), at most 8128) of
  ;; elements 0..15 and of 16..31 (32 bytes: 64 per block, as the plain layout). With $q6 (Q6_K) those 32
  ;; bytes hold instead, in every fourth block j (j mod 4 = 0), 32 times the totals of the halves of blocks
  ;; j .. j + 3 (i32x4 each, the first halves then the second, blocks j, j + 2, j + 1, j + 3 in lanes
  ;; 0..3): the offsets of a Q6_K step's four groups, in the order its sums come in.
  (func $quantize_x8 (param $x i32) (param $k i32) (param $xq i32) (param $xd i32) (param $xs i32) (param $q6 i32)
    (local $end i32) (local $m v128) (local $amax f32) (local $d f32) (local $id v128) (local $b0 v128) (local $b1 v128) (local $s0 v128) (local $s1 v128)
    (local $j i32) (local $t i32) (local $at i32) (local $w v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2))))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $m (f32x4.max
          (f32x4.max (f32x4.max (f32x4.abs (v128.load (local.get $x))) (f32x4.abs (v128.load offset=16 (local.get $x))))
            (f32x4.max (f32x4.abs (v128.load offset=32 (local.get $x))) (f32x4.abs (v128.load offset=48 (local.get $x)))))
          (f32x4.max (f32x4.max (f32x4.abs (v128.load offset=64 (local.get $x))) (f32x4.abs (v128.load offset=80 (local.get $x))))
            (f32x4.max (f32x4.abs (v128.load offset=96 (local.get $x))) (f32x4.abs (v128.load offset=112 (local.get $x)))))))
        (local.set $amax (f32.max (f32.max (f32x4.extract_lane 0 (local.get $m)) (f32x4.extract_lane 1 (local.get $m)))
          (f32.max (f32x4.extract_lane 2 (local.get $m)) (f32x4.extract_lane 3 (local.get $m)))))
        (local.set $d (f32.div (local.get $amax) (f32.const 127)))
        (local.set $id (f32x4.splat (select (f32.div (f32.const 1) (local.get $d)) (f32.const 0) (f32.ne (local.get $d) (f32.const 0)))))
        (f32.store (local.get $xd) (local.get $d))
        (local.set $b0 (i8x16.narrow_i16x8_s (call $q16 (local.get $x) (local.get $id)) (call $q16 (i32.add (local.get $x) (i32.const 32)) (local.get $id))))
        (local.set $b1 (i8x16.narrow_i16x8_s (call $q16 (i32.add (local.get $x) (i32.const 64)) (local.get $id)) (call $q16 (i32.add (local.get $x) (i32.const 96)) (local.get $id))))
        (v128.store (local.get $xq) (local.get $b0))
        (v128.store offset=16 (local.get $xq) (local.get $b1))
        (local.set $s0 (i16x8.extadd_pairwise_i8x16_s (local.get $b0)))
        (local.set $s1 (i16x8.extadd_pairwise_i8x16_s (local.get $b1)))
        (if (local.get $q6)
          (then
            ;; Q6_K: 32 times each half's total as an i32, in lane 0, 2, 1, 3 (for t = j mod 4 = 0, 1, 2, 3) of the
            ;; vector at bytes 32 (first halves) and 48 (second halves) of block j - t: one step's four offsets.
            (local.set $at (i32.add (i32.sub (local.get $xq) (i32.shl (local.tee $t (i32.and (local.get $j) (i32.const 3))) (i32.const 6)))
              (i32.shl (i32.or (i32.shl (i32.and (local.get $t) (i32.const 1)) (i32.const 1)) (i32.shr_u (local.get $t) (i32.const 1))) (i32.const 2))))
            (local.set $w (i32x4.extadd_pairwise_i16x8_s (local.get $s0)))
            (i32.store offset=32 (local.get $at) (i32.shl (i32.add (i32.add (i32x4.extract_lane 0 (local.get $w)) (i32x4.extract_lane 1 (local.get $w)))
              (i32.add (i32x4.extract_lane 2 (local.get $w)) (i32x4.extract_lane 3 (local.get $w)))) (i32.const 5)))
            (local.set $w (i32x4.extadd_pairwise_i16x8_s (local.get $s1)))
            (i32.store offset=48 (local.get $at) (i32.shl (i32.add (i32.add (i32x4.extract_lane 0 (local.get $w)) (i32x4.extract_lane 1 (local.get $w)))
              (i32.add (i32x4.extract_lane 2 (local.get $w)) (i32x4.extract_lane 3 (local.get $w)))) (i32.const 5))))
          (else
            (v128.store offset=32 (local.get $xq) (i16x8.shl (local.get $s0) (i32.const 5)))
            (v128.store offset=48 (local.get $xq) (i16x8.shl (local.get $s1) (i32.const 5)))))
        ;; The block's total, exact, as f32.
        (local.set $w (i32x4.extadd_pairwise_i16x8_s (i16x8.add (local.get $s0) (local.get $s1))))
        (f32.store (local.get $xs) (f32.convert_i32_s (i32.add (i32.add (i32x4.extract_lane 0 (local.get $w)) (i32x4.extract_lane 1 (local.get $w)))
          (i32.add (i32x4.extract_lane 2 (local.get $w)) (i32x4.extract_lane 3 (local.get $w))))))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
        (local.set $xd (i32.add (local.get $xd) (i32.const 4)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $block))))

  ;; relaxed-only: end
  ;; The even i16 lanes of $a then those of $b (elements 0, 2, .. 14 of the 16 in $a, $b), and the odd ones.
  (func $evens (param $a v128) (param $b v128) (result v128)
    (i8x16.shuffle 0 1 4 5 8 9 12 13 16 17 20 21 24 25 28 29 (local.get $a) (local.get $b)))
  (func $odds (param $a v128) (param $b v128) (result v128)
    (i8x16.shuffle 2 3 6 7 10 11 14 15 18 19 22 23 26 27 30 31 (local.get $a) (local.get $b)))

  ;; Eight floats at $x times $id, rounded to the nearest integer (ties to even), as eight i16.
  (func $q16 (param $x i32) (param $id v128) (result v128)
    (i16x8.narrow_i32x4_s
      (i32x4.trunc_sat_f32x4_s (f32x4.nearest (f32x4.mul (v128.load (local.get $x)) (local.get $id))))
      (i32x4.trunc_sat_f32x4_s (f32x4.nearest (f32x4.mul (v128.load offset=16 (local.get $x)) (local.get $id))))))

  ;; Per block b of one Q4_0 / Q8_0 row: f[b] = d_w[b] * d_x[b] (the f16 block scales of the half plane at
  ;; $hp, exactly as $half decodes them, times x's block scales at $xd); f32 at $f + 4b. Eight blocks per
  ;; step, decoded inline without branches (small models' block scales are often subnormal halves, so a
  ;; fast path for normal ones alone would rarely run): |h| below 0x400 (zero, subnormal) as |h| * 2^-24
  ;; (exact, and a normal f32: no slow subnormal arithmetic), above 0x7bff (infinity, NaN) with the
  ;; exponent all ones, normal ones rebiased; then the sign. The blocks mod 8 one at a time.
  (func $block_factors (param $hp i32) (param $xd i32) (param $blocks i32) (param $f i32)
    (local $b i32) (local $b8 i32) (local $h v128) (local $u v128) (local $t v128) (local $at i32)
    (local.set $b8 (i32.and (local.get $blocks) (i32.const -8)))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $b) (local.get $b8)))
        (local.set $h (v128.load (i32.add (local.get $hp) (i32.shl (local.get $b) (i32.const 1)))))
        (local.set $at (i32.shl (local.get $b) (i32.const 2)))
        (v128.store (i32.add (local.get $f) (local.get $at))
          (f32x4.mul (v128.or (i32x4.shl (v128.and (local.tee $u (i32x4.extend_low_i16x8_u (local.get $h))) (i32x4.splat (i32.const 0x8000))) (i32.const 16))
                (v128.bitselect (i32x4.add (i32x4.shl (local.tee $t (v128.and (local.get $u) (i32x4.splat (i32.const 0x7fff)))) (i32.const 13)) (i32x4.splat (i32.const 0x70000000)))
                  (v128.bitselect (f32x4.mul (f32x4.convert_i32x4_s (local.get $t)) (f32x4.splat (global.get $HALF_SUB_UNIT)))
                    (i32x4.add (i32x4.shl (local.get $t) (i32.const 13)) (i32x4.splat (global.get $HALF_REBIAS)))
                    (i32x4.lt_s (local.get $t) (i32x4.splat (i32.const 0x400))))
                  (i32x4.gt_s (local.get $t) (i32x4.splat (i32.const 0x7bff)))))
            (v128.load (i32.add (local.get $xd) (local.get $at)))))
        (v128.store offset=16 (i32.add (local.get $f) (local.get $at))
          (f32x4.mul (v128.or (i32x4.shl (v128.and (local.tee $u (i32x4.extend_high_i16x8_u (local.get $h))) (i32x4.splat (i32.const 0x8000))) (i32.const 16))
                (v128.bitselect (i32x4.add (i32x4.shl (local.tee $t (v128.and (local.get $u) (i32x4.splat (i32.const 0x7fff)))) (i32.const 13)) (i32x4.splat (i32.const 0x70000000)))
                  (v128.bitselect (f32x4.mul (f32x4.convert_i32x4_s (local.get $t)) (f32x4.splat (global.get $HALF_SUB_UNIT)))
                    (i32x4.add (i32x4.shl (local.get $t) (i32.const 13)) (i32x4.splat (global.get $HALF_REBIAS)))
                    (i32x4.lt_s (local.get $t) (i32x4.splat (i32.const 0x400))))
                  (i32x4.gt_s (local.get $t) (i32x4.splat (i32.const 0x7bff)))))
            (v128.load offset=16 (i32.add (local.get $xd) (local.get $at)))))
        (local.set $b (i32.add (local.get $b) (i32.const 8)))
        (br $step8)))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (f32.store (i32.add (local.get $f) (i32.shl (local.get $b) (i32.const 2)))
          (f32.mul (call $block_half (local.get $hp) (local.get $b)) (f32.load (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 2))))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $step))))

  ;; $block_factors of four rows at once (row r's halves at $hp + $s_r, its factors at $f + r $fb), the
  ;; same values. Eight blocks per step: when the step's 32 halves are all normal (|h| in 0x400 .. 0x7bff,
  ;; the usual case) each is its sign, then exponent and mantissa shifted into place and rebiased (a
  ;; sign-extended half shifted left by 13 keeps its sign in bit 31), exactly as $half decodes it; otherwise
  ;; (a zero, subnormal, infinite or NaN half) the four rows go through $block_factors whole. The blocks mod
  ;; 8 one at a time.
  (func $factors4 (param $hp i32) (param $s1 i32) (param $s2 i32) (param $s3 i32) (param $xd i32) (param $blocks i32) (param $f i32) (param $fb i32)
    (local $b i32) (local $b8 i32) (local $at i32) (local $r i32) (local $h0 v128) (local $h1 v128) (local $h2 v128) (local $h3 v128) (local $x0 v128) (local $x1 v128)
    (local $lo v128) (local $hi v128) (local $keep v128) (local $rebias v128) (local $m7f v128) (local $t v128)
    (local.set $rebias (i32x4.splat (global.get $HALF_REBIAS)))
    (local.set $m7f (i16x8.splat (i32.const 0x7fff)))
    (local.set $b8 (i32.and (local.get $blocks) (i32.const -8)))
    (local.set $lo (i16x8.splat (i32.const 0x400)))
    (local.set $hi (i16x8.splat (i32.const 0x7bff)))
    (local.set $keep (i32x4.splat (i32.const 0x8fffe000)))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $b) (local.get $b8)))
        (local.set $at (i32.add (local.get $hp) (i32.shl (local.get $b) (i32.const 1))))
        (local.set $h0 (v128.load (local.get $at)))
        (local.set $h1 (v128.load (i32.add (local.get $at) (local.get $s1))))
        (local.set $h2 (v128.load (i32.add (local.get $at) (local.get $s2))))
        (local.set $h3 (v128.load (i32.add (local.get $at) (local.get $s3))))
        (if (v128.any_true (v128.or
              (v128.or (v128.or (i16x8.lt_u (local.tee $t (v128.and (local.get $h0) (local.get $m7f))) (local.get $lo)) (i16x8.gt_u (local.get $t) (local.get $hi)))
                (v128.or (i16x8.lt_u (local.tee $t (v128.and (local.get $h1) (local.get $m7f))) (local.get $lo)) (i16x8.gt_u (local.get $t) (local.get $hi))))
              (v128.or (v128.or (i16x8.lt_u (local.tee $t (v128.and (local.get $h2) (local.get $m7f))) (local.get $lo)) (i16x8.gt_u (local.get $t) (local.get $hi)))
                (v128.or (i16x8.lt_u (local.tee $t (v128.and (local.get $h3) (local.get $m7f))) (local.get $lo)) (i16x8.gt_u (local.get $t) (local.get $hi))))))
          (then
            (call $block_factors (local.get $hp) (local.get $xd) (local.get $blocks) (local.get $f))
            (call $block_factors (i32.add (local.get $hp) (local.get $s1)) (local.get $xd) (local.get $blocks) (i32.add (local.get $f) (local.get $fb)))
            (call $block_factors (i32.add (local.get $hp) (local.get $s2)) (local.get $xd) (local.get $blocks) (i32.add (local.get $f) (i32.shl (local.get $fb) (i32.const 1))))
            (call $block_factors (i32.add (local.get $hp) (local.get $s3)) (local.get $xd) (local.get $blocks) (i32.add (local.get $f) (i32.mul (local.get $fb) (i32.const 3))))
            (return)))
        (local.set $at (i32.shl (local.get $b) (i32.const 2)))
        (local.set $x0 (v128.load (i32.add (local.get $xd) (local.get $at))))
        (local.set $x1 (v128.load offset=16 (i32.add (local.get $xd) (local.get $at))))
        (local.set $at (i32.add (local.get $f) (local.get $at)))
        (v128.store (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $h0)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x0)))
        (v128.store offset=16 (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $h0)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x1)))
        (local.set $at (i32.add (local.get $at) (local.get $fb)))
        (v128.store (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $h1)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x0)))
        (v128.store offset=16 (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $h1)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x1)))
        (local.set $at (i32.add (local.get $at) (local.get $fb)))
        (v128.store (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $h2)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x0)))
        (v128.store offset=16 (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $h2)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x1)))
        (local.set $at (i32.add (local.get $at) (local.get $fb)))
        (v128.store (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_low_i16x8_s (local.get $h3)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x0)))
        (v128.store offset=16 (local.get $at) (f32x4.mul (i32x4.add (v128.and (i32x4.shl (i32x4.extend_high_i16x8_s (local.get $h3)) (i32.const 13)) (local.get $keep)) (local.get $rebias)) (local.get $x1)))
        (local.set $b (i32.add (local.get $b) (i32.const 8)))
        (br $step8)))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $r (i32.const 0))
        (local.set $at (i32.add (local.get $f) (i32.shl (local.get $b) (i32.const 2))))
        (loop $rows
          (f32.store (local.get $at)
            (f32.mul (call $block_half (i32.add (local.get $hp) (select (select (local.get $s3) (local.get $s2) (i32.eq (local.get $r) (i32.const 3)))
                (select (local.get $s1) (i32.const 0) (i32.eq (local.get $r) (i32.const 1))) (i32.ge_u (local.get $r) (i32.const 2)))) (local.get $b))
              (f32.load (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 2))))))
          (local.set $at (i32.add (local.get $at) (local.get $fb)))
          (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (i32.const 4))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $step))))

  ;; plain-only: begin
  ;; Four rows of Q4_0 quants (16 nibble bytes per block; row r at $w + $s_r, $s0 = 0) against one quantized
  ;; row of x ($xq), row r's block factors at $f + r $fb ($block_factors); row r's result is stored at $o_r.
  ;; Per row and block: s = the four lanes of the exact integer dot product, acc += f32(s) * f[b]; the
  ;; result is acc's lane sum. The rows share each load of x; no row's arithmetic depends on another's, so
  ;; a row gives the same bits whichever rows it is grouped with (a group past the last row repeats the last
  ;; row: $s_r and $o_r those of the last).
  ;; Unpacking: as 16-bit lanes, lane i of the 16 bytes holds element 2i (bits 0..3), 2i + 16 (4..7),
  ;; 2i + 1 (8..11) and 2i + 17 (12..15); xor with 8 in every nibble makes each nibble q - 8 in 4-bit two's
  ;; complement, which a left shift to the top and an arithmetic right shift by 12 sign-extend.
  (func $rows4_q4_0_q8x (param $xq i32) (param $w i32) (param $s1 i32) (param $s2 i32) (param $s3 i32) (param $blocks i32) (param $f i32) (param $fb i32)
    (param $o0 i32) (param $o1 i32) (param $o2 i32) (param $o3 i32)
    (local $end i32) (local $f2 i32) (local $f3 i32) (local $v v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $m88 v128)
    (local $acc0 v128) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $blocks) (i32.const 4))))
    (local.set $f2 (i32.shl (local.get $fb) (i32.const 1)))
    (local.set $f3 (i32.add (local.get $f2) (local.get $fb)))
    (local.set $m88 (i8x16.splat (i32.const 0x88)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $x0 (v128.load (local.get $xq)))
        (local.set $x1 (v128.load offset=16 (local.get $xq)))
        (local.set $x2 (v128.load offset=32 (local.get $xq)))
        (local.set $x3 (v128.load offset=48 (local.get $xq)))
        (local.set $v (v128.xor (v128.load (local.get $w)) (local.get $m88)))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 12)) (i32.const 12)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 4)) (i32.const 12)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 8)) (i32.const 12)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $v) (i32.const 12)) (local.get $x3)))))
          (v128.load32_splat (local.get $f)))))
        (local.set $v (v128.xor (v128.load (i32.add (local.get $w) (local.get $s1))) (local.get $m88)))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 12)) (i32.const 12)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 4)) (i32.const 12)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 8)) (i32.const 12)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $v) (i32.const 12)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $fb))))))
        (local.set $v (v128.xor (v128.load (i32.add (local.get $w) (local.get $s2))) (local.get $m88)))
        (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 12)) (i32.const 12)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 4)) (i32.const 12)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 8)) (i32.const 12)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $v) (i32.const 12)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f2))))))
        (local.set $v (v128.xor (v128.load (i32.add (local.get $w) (local.get $s3))) (local.get $m88)))
        (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 12)) (i32.const 12)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 4)) (i32.const 12)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $v) (i32.const 8)) (i32.const 12)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $v) (i32.const 12)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f3))))))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
        (local.set $f (i32.add (local.get $f) (i32.const 4)))
        (br $block)))
    (call $store_sums4 (local.get $acc0) (local.get $acc1) (local.get $acc2) (local.get $acc3) (local.get $o0) (local.get $o1) (local.get $o2) (local.get $o3)))

  ;; plain-only: end
  ;; relaxed-only: begin
  ;; The relaxed build's four rows of Q4_0: per block, x's 32 bytes against the nibbles' unsigned form (low
  ;; nibbles: elements 0..15, high: 16..31), each 16 by i16x8.relaxed_dot_i8x16_i7x16_s, the two added, less
  ;; 8 times x's pair sums of the two halves (a quarter of the quantizer's 32 times; no i16 lane can
  ;; overflow: 4 * 15 * 127 and 4 * 8 * 127), widened pairwise: the plain build's lane sums of (q - 8) x, exactly.
  (func $rows4_q4_0_q8x (param $xq i32) (param $w i32) (param $s1 i32) (param $s2 i32) (param $s3 i32) (param $blocks i32) (param $f i32) (param $fb i32)
    (param $o0 i32) (param $o1 i32) (param $o2 i32) (param $o3 i32)
    (local $end i32) (local $f2 i32) (local $f3 i32) (local $v v128) (local $x0 v128) (local $x1 v128) (local $c v128) (local $m0f v128)
    (local $acc0 v128) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $blocks) (i32.const 4))))
    (local.set $f2 (i32.shl (local.get $fb) (i32.const 1)))
    (local.set $f3 (i32.add (local.get $f2) (local.get $fb)))
    (local.set $m0f (i8x16.splat (i32.const 0x0f)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $x0 (v128.load (local.get $xq)))
        (local.set $x1 (v128.load offset=16 (local.get $xq)))
        (local.set $c (i16x8.shr_s (i16x8.add (v128.load offset=32 (local.get $xq)) (v128.load offset=48 (local.get $xq))) (i32.const 2)))
        (local.set $v (v128.load (local.get $w)))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s (i16x8.sub (i16x8.add
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x0) (v128.and (local.get $v) (local.get $m0f)))
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x1) (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $m0f))))
          (local.get $c))))
          (v128.load32_splat (local.get $f)))))
        (local.set $v (v128.load (i32.add (local.get $w) (local.get $s1))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s (i16x8.sub (i16x8.add
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x0) (v128.and (local.get $v) (local.get $m0f)))
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x1) (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $m0f))))
          (local.get $c))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $fb))))))
        (local.set $v (v128.load (i32.add (local.get $w) (local.get $s2))))
        (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s (i16x8.sub (i16x8.add
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x0) (v128.and (local.get $v) (local.get $m0f)))
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x1) (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $m0f))))
          (local.get $c))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f2))))))
        (local.set $v (v128.load (i32.add (local.get $w) (local.get $s3))))
        (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s (i16x8.sub (i16x8.add
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x0) (v128.and (local.get $v) (local.get $m0f)))
          (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $x1) (v128.and (i16x8.shr_u (local.get $v) (i32.const 4)) (local.get $m0f))))
          (local.get $c))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f3))))))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
        (local.set $f (i32.add (local.get $f) (i32.const 4)))
        (br $block)))
    (call $store_sums4 (local.get $acc0) (local.get $acc1) (local.get $acc2) (local.get $acc3) (local.get $o0) (local.get $o1) (local.get $o2) (local.get $o3)))

  ;; relaxed-only: end
  ;; Each of four accumulators' lane sums, (l0 + l1) + (l2 + l3), stored at $o0 .. $o3 in that order (a
  ;; repeated row stores its same value again).
  (func $store_sums4 (param $a0 v128) (param $a1 v128) (param $a2 v128) (param $a3 v128) (param $o0 i32) (param $o1 i32) (param $o2 i32) (param $o3 i32)
    (f32.store (local.get $o0) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
      (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
    (f32.store (local.get $o1) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $a1)) (f32x4.extract_lane 1 (local.get $a1)))
      (f32.add (f32x4.extract_lane 2 (local.get $a1)) (f32x4.extract_lane 3 (local.get $a1)))))
    (f32.store (local.get $o2) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $a2)) (f32x4.extract_lane 1 (local.get $a2)))
      (f32.add (f32x4.extract_lane 2 (local.get $a2)) (f32x4.extract_lane 3 (local.get $a2)))))
    (f32.store (local.get $o3) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $a3)) (f32x4.extract_lane 1 (local.get $a3)))
      (f32.add (f32x4.extract_lane 2 (local.get $a3)) (f32x4.extract_lane 3 (local.get $a3))))))

  ;; Rows j .. j + 3 of Q4_0 ($kind 4) or Q8_0 (3) (row r at $row + $s_r; past the last row, the last
  ;; again) against every quantized row of x: out[i, j + r] at $o_r + i $nBytes. $f: 16 bytes per block of
  ;; scratch (four rows' factors).
  (func $quad_q8x (param $kind i32) (param $qs i32) (param $xqBytes i32) (param $row i32) (param $s1 i32) (param $s2 i32) (param $s3 i32) (param $p0 i32) (param $blocks i32)
    (param $m i32) (param $f i32) (param $o0 i32) (param $o1 i32) (param $o2 i32) (param $o3 i32) (param $nBytes i32)
    (local $i i32) (local $xRow i32) (local $xd i32) (local $fb i32) (local $hp i32)
    (local.set $fb (i32.shl (local.get $blocks) (i32.const 2)))
    (local.set $hp (i32.add (local.get $row) (local.get $p0)))
    (block $xDone
      (loop $xRows
        (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
        (local.set $xRow (i32.add (local.get $qs) (i32.mul (local.get $i) (local.get $xqBytes))))
        (local.set $xd (i32.add (local.get $xRow) (i32.shl (local.get $blocks) (i32.const 6))))
        (call $factors4 (local.get $hp) (local.get $s1) (local.get $s2) (local.get $s3) (local.get $xd) (local.get $blocks) (local.get $f) (local.get $fb))
        (if (i32.eq (local.get $kind) (i32.const 4))
          (then (call $rows4_q4_0_q8x (local.get $xRow) (local.get $row) (local.get $s1) (local.get $s2) (local.get $s3) (local.get $blocks) (local.get $f) (local.get $fb)
            (local.get $o0) (local.get $o1) (local.get $o2) (local.get $o3)))
          (else (call $rows4_q8_0_q8x (local.get $xRow) (local.get $row) (local.get $s1) (local.get $s2) (local.get $s3) (local.get $blocks) (local.get $f) (local.get $fb)
            (local.get $o0) (local.get $o1) (local.get $o2) (local.get $o3))))
        (local.set $o0 (i32.add (local.get $o0) (local.get $nBytes)))
        (local.set $o1 (i32.add (local.get $o1) (local.get $nBytes)))
        (local.set $o2 (i32.add (local.get $o2) (local.get $nBytes)))
        (local.set $o3 (i32.add (local.get $o3) (local.get $nBytes)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $xRows))))

  ;; The same for four Q8_0 rows (32 signed bytes per block): as 16-bit lanes, the even bytes (shifted up
  ;; and back, sign-extending) and the odd bytes (an arithmetic shift down) of each 16.
  (func $rows4_q8_0_q8x (param $xq i32) (param $w i32) (param $s1 i32) (param $s2 i32) (param $s3 i32) (param $blocks i32) (param $f i32) (param $fb i32)
    (param $o0 i32) (param $o1 i32) (param $o2 i32) (param $o3 i32)
    (local $end i32) (local $f2 i32) (local $f3 i32) (local $lo v128) (local $hi v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $acc0 v128) (local $acc1 v128) (local $acc2 v128) (local $acc3 v128)
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $blocks) (i32.const 5))))
    (local.set $f2 (i32.shl (local.get $fb) (i32.const 1)))
    (local.set $f3 (i32.add (local.get $f2) (local.get $fb)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $w) (local.get $end)))
        (local.set $x0 (v128.load (local.get $xq)))
        (local.set $x1 (v128.load offset=16 (local.get $xq)))
        (local.set $x2 (v128.load offset=32 (local.get $xq)))
        (local.set $x3 (v128.load offset=48 (local.get $xq)))
        (local.set $lo (v128.load (local.get $w)))
        (local.set $hi (v128.load offset=16 (local.get $w)))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $lo) (i32.const 8)) (i32.const 8)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $lo) (i32.const 8)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $hi) (i32.const 8)) (i32.const 8)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $hi) (i32.const 8)) (local.get $x3)))))
          (v128.load32_splat (local.get $f)))))
        (local.set $lo (v128.load (i32.add (local.get $w) (local.get $s1))))
        (local.set $hi (v128.load offset=16 (i32.add (local.get $w) (local.get $s1))))
        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $lo) (i32.const 8)) (i32.const 8)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $lo) (i32.const 8)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $hi) (i32.const 8)) (i32.const 8)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $hi) (i32.const 8)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $fb))))))
        (local.set $lo (v128.load (i32.add (local.get $w) (local.get $s2))))
        (local.set $hi (v128.load offset=16 (i32.add (local.get $w) (local.get $s2))))
        (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $lo) (i32.const 8)) (i32.const 8)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $lo) (i32.const 8)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $hi) (i32.const 8)) (i32.const 8)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $hi) (i32.const 8)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f2))))))
        (local.set $lo (v128.load (i32.add (local.get $w) (local.get $s3))))
        (local.set $hi (v128.load offset=16 (i32.add (local.get $w) (local.get $s3))))
        (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.add
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $lo) (i32.const 8)) (i32.const 8)) (local.get $x0))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $lo) (i32.const 8)) (local.get $x1)))
          (i32x4.add (i32x4.dot_i16x8_s (i16x8.shr_s (i16x8.shl (local.get $hi) (i32.const 8)) (i32.const 8)) (local.get $x2))
            (i32x4.dot_i16x8_s (i16x8.shr_s (local.get $hi) (i32.const 8)) (local.get $x3)))))
          (v128.load32_splat (i32.add (local.get $f) (local.get $f3))))))
        (local.set $w (i32.add (local.get $w) (i32.const 32)))
        (local.set $xq (i32.add (local.get $xq) (i32.const 64)))
        (local.set $f (i32.add (local.get $f) (i32.const 4)))
        (br $block)))
    (call $store_sums4 (local.get $acc0) (local.get $acc1) (local.get $acc2) (local.get $acc3) (local.get $o0) (local.get $o1) (local.get $o2) (local.get $o3)))

  ;; relaxed-only: begin
  ;; The relaxed build's Q6_K: two rows ($w0, $w1 = $w0 for a lone row) against one quantized row of x, sharing
  ;; each load of x; results stored at $o0, $o1. Per step (h, l) the four groups t = 0..3 (16 elements each,
  ;; scale 8h + l / 16 + 2t, x's block 8b + 4h + t) as x's 16 bytes against the unsigned 6-bit values (0..63)
  ;; by i16x8.relaxed_dot_i8x16_i7x16_s (lane i: elements 2i, 2i + 1, at most 2 * 63 * 127). The four groups'
  ;; lanes are then summed across: unpacks of 32 bits and i16 sums (4 elements, at most 32004), widened
  ;; pairwise, then unpacks of 64 bits and i32 sums, into one vector of the four groups' sums (groups 0, 2,
  ;; 1, 3 in lanes 0..3), less the step's four offsets 32 sum x (as the quantizer stores them, in that
  ;; order): each group's exact integer sum of (q - 32) x. Then acc += f32(sums) * (the step's four factors
  ;; in that order): one f32 step per four groups, as the scalar twin; each row's arithmetic its own, so it
  ;; gives the same bits whichever row it is paired with. x of group t: bytes at $xe + 64t; the offsets at
  ;; $xe + 32 ($xe = $xq + 64 (8b + 4h) + l).
  (func $dot2_q6_k_q8x (param $xq i32) (param $xd i32) (param $w0 i32) (param $w1 i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (param $f i32) (param $o0 i32) (param $o1 i32)
    (local $b i32) (local $step i32) (local $h i32) (local $l i32) (local $ql i32) (local $qh i32) (local $xe i32) (local $hb i32) (local $ht i32) (local $dw i32) (local $fp i32)
    (local $d0 v128) (local $d1 v128) (local $xa v128) (local $xb v128) (local $s16 v128) (local $e v128) (local $xv v128) (local $xs v128) (local $q v128)
    (local $g0 v128) (local $g1 v128) (local $u0 v128) (local $u1 v128) (local $v v128)
    (local $qa0 v128) (local $qc0 v128) (local $qh0 v128) (local $qa1 v128) (local $qc1 v128) (local $qh1 v128) (local $acc0 v128) (local $acc1 v128)
    (local $m0f v128) (local $m30 v128)
    (local.set $dw (i32.sub (local.get $w1) (local.get $w0)))
    (local.set $m0f (i8x16.splat (i32.const 0x0f)))
    (local.set $m30 (i8x16.splat (i32.const 0x30)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        ;; Each row's d as $half decodes it, inline and without branches (as in $dot_q4_k_q8x).
        (local.set $hb (i32.load16_u (i32.add (i32.add (local.get $w0) (local.get $p2)) (i32.shl (local.get $b) (i32.const 1)))))
        (local.set $d0 (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $hb) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $hb) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        (local.set $hb (i32.load16_u (i32.add (i32.add (local.get $w1) (local.get $p2)) (i32.shl (local.get $b) (i32.const 1)))))
        (local.set $d1 (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $hb) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $hb) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        ;; Each row's 16 factors f(f(d sc_s) d_x) in step order: step (h, l) (2h + l / 16) holds group t's, scale
        ;; s = 8h + l / 16 + 2t (sign-extended byte s of the 16; x's block 8b + 4h + t), in lane 0, 2, 1, 3 for
        ;; t = 0, 1, 2, 3 (the order the group sums come in); row 0's four steps at $f, row 1's at $f + 64.
        (local.set $xa (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 12 13 14 15
          (local.tee $xa (v128.load (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 5))))) (local.get $xa)))
        (local.set $xb (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 12 13 14 15
          (local.tee $xb (v128.load offset=16 (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 5))))) (local.get $xb)))
        (local.set $e (i8x16.shuffle 0 4 2 6 1 5 3 7 8 12 10 14 9 13 11 15
          (local.tee $s16 (v128.load (i32.add (i32.add (local.get $w0) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))) (local.get $s16)))
        (local.set $s16 (i16x8.extend_low_i8x16_s (local.get $e)))
        (v128.store offset=0 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d0) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $s16)))) (local.get $xa)))
        (v128.store offset=16 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d0) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $s16)))) (local.get $xa)))
        (local.set $s16 (i16x8.extend_high_i8x16_s (local.get $e)))
        (v128.store offset=32 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d0) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $s16)))) (local.get $xb)))
        (v128.store offset=48 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d0) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $s16)))) (local.get $xb)))
        (local.set $e (i8x16.shuffle 0 4 2 6 1 5 3 7 8 12 10 14 9 13 11 15
          (local.tee $s16 (v128.load (i32.add (i32.add (local.get $w1) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))) (local.get $s16)))
        (local.set $s16 (i16x8.extend_low_i8x16_s (local.get $e)))
        (v128.store offset=64 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d1) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $s16)))) (local.get $xa)))
        (v128.store offset=80 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d1) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $s16)))) (local.get $xa)))
        (local.set $s16 (i16x8.extend_high_i8x16_s (local.get $e)))
        (v128.store offset=96 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d1) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $s16)))) (local.get $xb)))
        (v128.store offset=112 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d1) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $s16)))) (local.get $xb)))
        (local.set $step (i32.const 0))
        (block $stepsDone
          (loop $steps
            (br_if $stepsDone (i32.ge_u (local.get $step) (i32.const 4)))
            ;; step = 2h + l / 16: ql[l..] and ql[32 + l..] (the low nibbles: groups 0, 1; the high: 2, 3), qh[l..].
            (local.set $h (i32.shr_u (local.get $step) (i32.const 1)))
            (local.set $l (i32.shl (i32.and (local.get $step) (i32.const 1)) (i32.const 4)))
            (local.set $ql (i32.add (i32.add (local.get $w0) (i32.shl (local.get $b) (i32.const 7))) (i32.add (i32.shl (local.get $h) (i32.const 6)) (local.get $l))))
            (local.set $qh (i32.add (i32.add (i32.add (local.get $w0) (local.get $p0)) (i32.shl (local.get $b) (i32.const 6)))
              (i32.add (i32.shl (local.get $h) (i32.const 5)) (local.get $l))))
            (local.set $fp (i32.add (local.get $f) (i32.shl (local.get $step) (i32.const 4))))
            (local.set $xe (i32.add (local.get $xq)
              (i32.add (i32.add (i32.shl (local.get $b) (i32.const 9)) (i32.shl (local.get $h) (i32.const 8))) (local.get $l))))
            ;; Groups 0 and 2 (the low and high nibbles of ql[l..]), then 1 and 3 (of ql[32 + l..]), each for both rows.
            (local.set $xv (v128.load offset=0 (local.get $xe)))
            (local.set $qa0 (v128.load (local.get $ql)))
            (local.set $qh0 (v128.load (local.get $qh)))
            (local.set $g0 (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (local.get $qa0) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh0) (i32.const 4)) (local.get $m30)))))
            (local.set $qa1 (v128.load (i32.add (local.get $ql) (local.get $dw))))
            (local.set $qh1 (v128.load (i32.add (local.get $qh) (local.get $dw))))
            (local.set $g1 (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (local.get $qa1) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh1) (i32.const 4)) (local.get $m30)))))
            (local.set $xv (v128.load offset=128 (local.get $xe)))
            (local.set $u0 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g0) (local.tee $v (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (i16x8.shr_u (local.get $qa0) (i32.const 4)) (local.get $m0f)) (v128.and (local.get $qh0) (local.get $m30))))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g0) (local.get $v))))
            (local.set $u1 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g1) (local.tee $v (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (i16x8.shr_u (local.get $qa1) (i32.const 4)) (local.get $m0f)) (v128.and (local.get $qh1) (local.get $m30))))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g1) (local.get $v))))
            (local.set $xv (v128.load offset=64 (local.get $xe)))
            (local.set $qc0 (v128.load offset=32 (local.get $ql)))
            (local.set $g0 (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (local.get $qc0) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh0) (i32.const 2)) (local.get $m30)))))
            (local.set $qc1 (v128.load offset=32 (i32.add (local.get $ql) (local.get $dw))))
            (local.set $g1 (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (local.get $qc1) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh1) (i32.const 2)) (local.get $m30)))))
            (local.set $xv (v128.load offset=192 (local.get $xe)))
            (local.set $v (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g0) (local.tee $v (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (i16x8.shr_u (local.get $qc0) (i32.const 4)) (local.get $m0f)) (v128.and (i16x8.shr_u (local.get $qh0) (i32.const 2)) (local.get $m30))))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g0) (local.get $v))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.sub
              (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.tee $u0 (i32x4.extadd_pairwise_i16x8_s (local.get $u0))) (local.tee $v (i32x4.extadd_pairwise_i16x8_s (local.get $v))))
                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u0) (local.get $v)))
              (v128.load offset=32 (local.get $xe))))
              (v128.load offset=0 (local.get $fp)))))
            (local.set $v (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g1) (local.tee $v (i16x8.relaxed_dot_i8x16_i7x16_s (local.get $xv) (v128.or (v128.and (i16x8.shr_u (local.get $qc1) (i32.const 4)) (local.get $m0f)) (v128.and (i16x8.shr_u (local.get $qh1) (i32.const 2)) (local.get $m30))))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g1) (local.get $v))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.sub
              (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.tee $u1 (i32x4.extadd_pairwise_i16x8_s (local.get $u1))) (local.tee $v (i32x4.extadd_pairwise_i16x8_s (local.get $v))))
                (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u1) (local.get $v)))
              (v128.load offset=32 (local.get $xe))))
              (v128.load offset=64 (local.get $fp)))))
            (local.set $step (i32.add (local.get $step) (i32.const 1)))
            (br $steps)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (f32.store (local.get $o0) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc0)) (f32x4.extract_lane 1 (local.get $acc0)))
      (f32.add (f32x4.extract_lane 2 (local.get $acc0)) (f32x4.extract_lane 3 (local.get $acc0)))))
    (f32.store (local.get $o1) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc1)) (f32x4.extract_lane 1 (local.get $acc1)))
      (f32.add (f32x4.extract_lane 2 (local.get $acc1)) (f32x4.extract_lane 3 (local.get $acc1))))))

  ;; relaxed-only: end
  ;; plain-only: begin
  ;; The plain build's two rows: as $dot2_q6_k_q8x above, each group's 6-bit values less 32 (signed bytes) as
  ;; 16-bit lanes, even bytes then odd bytes, times x's 16-bit values (i16x8.mul: at most 32 * 127 each), the
  ;; two added (lane i: the group's elements 2i, 2i + 1, at most 2 * 32 * 127), then summed across the four
  ;; groups (unpacks of 32 then 64 bits, i16 sums of at most 8 elements: 32512, widened pairwise: the same
  ;; group sums in the same lanes). x: the layout of $quantize_x16, group t of step (h, l) at $xe + 64t, even
  ;; elements, and $xe + 64t + 16, odd ones, with $xe = $xq + 2 (256b + 128h + l). The same f32 steps in the
  ;; same order.
  (func $dot2_q6_k_q8x (param $xq i32) (param $xd i32) (param $w0 i32) (param $w1 i32) (param $blocks i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (param $f i32) (param $o0 i32) (param $o1 i32)
    (local $b i32) (local $step i32) (local $h i32) (local $l i32) (local $ql i32) (local $qh i32) (local $xe i32) (local $hb i32) (local $ht i32) (local $dw i32) (local $fr i32)
    (local $dr0 v128) (local $dr1 v128) (local $xr0 v128) (local $xr1 v128) (local $sr v128) (local $er v128) (local $xv v128) (local $xs v128) (local $q v128)
    (local $g0 v128) (local $g1 v128) (local $ur0 v128) (local $ur1 v128) (local $v v128)
    (local $qa0 v128) (local $qc0 v128) (local $qh0 v128) (local $qa1 v128) (local $qc1 v128) (local $qh1 v128) (local $acc0 v128) (local $acc1 v128)
    (local $m0f v128) (local $m30 v128) (local $m20 v128)
    (local.set $dw (i32.sub (local.get $w1) (local.get $w0)))
    (local.set $m0f (i8x16.splat (i32.const 0x0f)))
    (local.set $m30 (i8x16.splat (i32.const 0x30)))
    (local.set $m20 (i8x16.splat (i32.const 32)))
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        ;; Each row's d as $half decodes it, inline and without branches (as in $dot_q4_k_q8x).
        (local.set $hb (i32.load16_u (i32.add (i32.add (local.get $w0) (local.get $p2)) (i32.shl (local.get $b) (i32.const 1)))))
        (local.set $dr0 (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $hb) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $hb) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        (local.set $hb (i32.load16_u (i32.add (i32.add (local.get $w1) (local.get $p2)) (i32.shl (local.get $b) (i32.const 1)))))
        (local.set $dr1 (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $hb) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $hb) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        ;; Each row's 16 factors f(f(d sc_s) d_x) in step order: step (h, l) (2h + l / 16) holds group t's, scale
        ;; s = 8h + l / 16 + 2t (sign-extended byte s of the 16; x's block 8b + 4h + t), in lane 0, 2, 1, 3 for
        ;; t = 0, 1, 2, 3 (the order the group sums come in); row 0's four steps at $f, row 1's at $f + 64.
        (local.set $xr0 (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 12 13 14 15
          (local.tee $xr0 (v128.load (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 5))))) (local.get $xr0)))
        (local.set $xr1 (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 12 13 14 15
          (local.tee $xr1 (v128.load offset=16 (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 5))))) (local.get $xr1)))
        (local.set $er (i8x16.shuffle 0 4 2 6 1 5 3 7 8 12 10 14 9 13 11 15
          (local.tee $sr (v128.load (i32.add (i32.add (local.get $w0) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))) (local.get $sr)))
        (local.set $sr (i16x8.extend_low_i8x16_s (local.get $er)))
        (v128.store offset=0 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr0) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $sr)))) (local.get $xr0)))
        (v128.store offset=16 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr0) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $sr)))) (local.get $xr0)))
        (local.set $sr (i16x8.extend_high_i8x16_s (local.get $er)))
        (v128.store offset=32 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr0) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $sr)))) (local.get $xr1)))
        (v128.store offset=48 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr0) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $sr)))) (local.get $xr1)))
        (local.set $er (i8x16.shuffle 0 4 2 6 1 5 3 7 8 12 10 14 9 13 11 15
          (local.tee $sr (v128.load (i32.add (i32.add (local.get $w1) (local.get $p1)) (i32.shl (local.get $b) (i32.const 4))))) (local.get $sr)))
        (local.set $sr (i16x8.extend_low_i8x16_s (local.get $er)))
        (v128.store offset=64 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr1) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $sr)))) (local.get $xr0)))
        (v128.store offset=80 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr1) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $sr)))) (local.get $xr0)))
        (local.set $sr (i16x8.extend_high_i8x16_s (local.get $er)))
        (v128.store offset=96 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr1) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $sr)))) (local.get $xr1)))
        (v128.store offset=112 (local.get $f) (f32x4.mul (f32x4.mul (local.get $dr1) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $sr)))) (local.get $xr1)))
        (local.set $step (i32.const 0))
        (block $stepsDone
          (loop $steps
            (br_if $stepsDone (i32.ge_u (local.get $step) (i32.const 4)))
            ;; step = 2h + l / 16: ql[l..] and ql[32 + l..] (the low nibbles: groups 0, 1; the high: 2, 3), qh[l..].
            (local.set $h (i32.shr_u (local.get $step) (i32.const 1)))
            (local.set $l (i32.shl (i32.and (local.get $step) (i32.const 1)) (i32.const 4)))
            (local.set $ql (i32.add (i32.add (local.get $w0) (i32.shl (local.get $b) (i32.const 7))) (i32.add (i32.shl (local.get $h) (i32.const 6)) (local.get $l))))
            (local.set $qh (i32.add (i32.add (i32.add (local.get $w0) (local.get $p0)) (i32.shl (local.get $b) (i32.const 6)))
              (i32.add (i32.shl (local.get $h) (i32.const 5)) (local.get $l))))
            (local.set $fr (i32.add (local.get $f) (i32.shl (local.get $step) (i32.const 4))))
            (local.set $xe (i32.add (local.get $xq)
              (i32.shl (i32.add (i32.add (i32.shl (local.get $b) (i32.const 8)) (i32.shl (local.get $h) (i32.const 7))) (local.get $l)) (i32.const 1))))
            ;; Groups 0 and 2 (the low and high nibbles of ql[l..]), then 1 and 3 (of ql[32 + l..]), each for both rows.
            (local.set $xv (v128.load offset=0 (local.get $xe)))
            (local.set $xs (v128.load offset=16 (local.get $xe)))
            (local.set $qa0 (v128.load (local.get $ql)))
            (local.set $qh0 (v128.load (local.get $qh)))
            (local.set $g0 (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (local.get $qa0) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh0) (i32.const 4)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs))))
            (local.set $qa1 (v128.load (i32.add (local.get $ql) (local.get $dw))))
            (local.set $qh1 (v128.load (i32.add (local.get $qh) (local.get $dw))))
            (local.set $g1 (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (local.get $qa1) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh1) (i32.const 4)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs))))
            (local.set $xv (v128.load offset=128 (local.get $xe)))
            (local.set $xs (v128.load offset=144 (local.get $xe)))
            (local.set $ur0 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g0) (local.tee $v (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (i16x8.shr_u (local.get $qa0) (i32.const 4)) (local.get $m0f)) (v128.and (local.get $qh0) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs)))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g0) (local.get $v))))
            (local.set $ur1 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g1) (local.tee $v (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (i16x8.shr_u (local.get $qa1) (i32.const 4)) (local.get $m0f)) (v128.and (local.get $qh1) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs)))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g1) (local.get $v))))
            (local.set $xv (v128.load offset=64 (local.get $xe)))
            (local.set $xs (v128.load offset=80 (local.get $xe)))
            (local.set $qc0 (v128.load offset=32 (local.get $ql)))
            (local.set $g0 (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (local.get $qc0) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh0) (i32.const 2)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs))))
            (local.set $qc1 (v128.load offset=32 (i32.add (local.get $ql) (local.get $dw))))
            (local.set $g1 (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (local.get $qc1) (local.get $m0f)) (v128.and (i16x8.shl (local.get $qh1) (i32.const 2)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs))))
            (local.set $xv (v128.load offset=192 (local.get $xe)))
            (local.set $xs (v128.load offset=208 (local.get $xe)))
            (local.set $v (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g0) (local.tee $v (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (i16x8.shr_u (local.get $qc0) (i32.const 4)) (local.get $m0f)) (v128.and (i16x8.shr_u (local.get $qh0) (i32.const 2)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs)))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g0) (local.get $v))))
            (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s
              (i16x8.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $ur0) (local.get $v)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $ur0) (local.get $v)))))
              (v128.load offset=0 (local.get $fr)))))
            (local.set $v (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $g1) (local.tee $v (i16x8.add (i16x8.mul (i16x8.shr_s (i16x8.shl (local.tee $q (i8x16.sub (v128.or (v128.and (i16x8.shr_u (local.get $qc1) (i32.const 4)) (local.get $m0f)) (v128.and (i16x8.shr_u (local.get $qh1) (i32.const 2)) (local.get $m30))) (local.get $m20))) (i32.const 8)) (i32.const 8)) (local.get $xv))
              (i16x8.mul (i16x8.shr_s (local.get $q) (i32.const 8)) (local.get $xs)))))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $g1) (local.get $v))))
            (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extadd_pairwise_i16x8_s
              (i16x8.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $ur1) (local.get $v)) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $ur1) (local.get $v)))))
              (v128.load offset=64 (local.get $fr)))))
            (local.set $step (i32.add (local.get $step) (i32.const 1)))
            (br $steps)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (f32.store (local.get $o0) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc0)) (f32x4.extract_lane 1 (local.get $acc0)))
      (f32.add (f32x4.extract_lane 2 (local.get $acc0)) (f32x4.extract_lane 3 (local.get $acc0)))))
    (f32.store (local.get $o1) (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc1)) (f32x4.extract_lane 1 (local.get $acc1)))
      (f32.add (f32x4.extract_lane 2 (local.get $acc1)) (f32x4.extract_lane 3 (local.get $acc1))))))

  ;; plain-only: end

  ;; One Q4_K row of $blocks super-blocks against one quantized row of x ($xq, $xd; $xs: per x block the
  ;; f32 of the block's total sum x_q, 4 bytes each, written by $quantize_x16 or $quantize_x8): sub-block s
  ;; of super-block b (elements 256b + 32s .., x's block 8b + s) has 32 nibbles (low halves of the 32 bytes
  ;; at $w + 128b + 32(s / 2) for even s, high halves for odd s), scale d * sc_s and min -(dmin * m_s)
  ;; (GGML's products). The 6-bit sc_s and m_s of all 8 sub-blocks are unpacked at once from the 12 scale
  ;; bytes (byte lanes 0..7: sc, 8..15: m; the packing of $decode_q4_k), and the factors (d * sc_s) * d_x
  ;; and (-(dmin * m_s)) * d_x go to $f as four f32x4 (scales of sub-blocks 0..3, 4..7, then mins; lane l:
  ;; sub-block 4t + l). Step t (two per super-block) sums each of its four sub-blocks' 32 products q x_q
  ;; across into one lane, exactly (lane l: sub-block 4t + l), then acc += f32(S) * scale factors,
  ;; acc += f32(X) * min factors (X: the four blocks' x totals, one load); the result is acc's lane sum. The
  ;; four sub-blocks' lane vectors meet by unpacks of 32 then 64 bits and adds. Plain build: per sub-block
  ;; four i32x4.dot_i16x8_s (i32 lanes). The relaxed build: per sub-block, x's 32 bytes against the
  ;; (unsigned) nibbles by i16x8.relaxed_dot_i8x16_i7x16_s per 16, added (at most 4 * 15 * 127 per i16
  ;; lane), the unpacks' adds in i16 too (at most 16 * 15 * 127 = 30480), then widened pairwise: the same
  ;; integers. Sub-block 4t + l's x at $xe + 64l. (The factors stay in $f rather than in locals: carried
  ;; through the step loop, or with the steps written out, they cost more in vector moves and spills.)
  (func $dot_q4_k_q8x (param $xq i32) (param $xd i32) (param $xs i32) (param $w i32) (param $blocks i32) (param $p0 i32) (param $p1 i32)
    (param $f i32) (result f32)
    (local $fp i32) (local $b i32) (local $t i32) (local $dm i32) (local $qp i32) (local $xe i32) (local $xb i32) (local $hb i32) (local $ht i32)
    (local $r v128) (local $a v128) (local $u v128) (local $d v128) (local $dmin v128) (local $v0 v128) (local $v1 v128) (local $acc v128)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (block $done
      (loop $block
        (br_if $done (i32.ge_u (local.get $b) (local.get $blocks)))
        (local.set $dm (i32.load (i32.add (i32.add (local.get $w) (local.get $p1)) (i32.shl (local.get $b) (i32.const 2)))))
        ;; d and dmin as $half decodes them, inline and without branches (a call per half is not inlined by
        ;; V8, and the two often differ in kind, normal and subnormal): subnormal halves (|h| < 0x400) as
        ;; |h| * 2^-24, infinities and NaN with the exponent all ones, normal ones rebiased; then the sign.
        (local.set $d (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $dm) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $dm) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        (local.set $hb (i32.shr_u (local.get $dm) (i32.const 16)))
        (local.set $dmin (f32x4.splat (f32.reinterpret_i32 (i32.or (i32.shl (i32.and (local.get $hb) (i32.const 0x8000)) (i32.const 16))
          (select (i32.reinterpret_f32 (f32.mul (f32.convert_i32_u (local.tee $ht (i32.and (local.get $hb) (i32.const 0x7fff)))) (global.get $HALF_SUB_UNIT)))
            (select (i32.add (i32.shl (local.get $ht) (i32.const 13)) (i32.const 0x70000000))
              (i32.add (i32.shl (local.get $ht) (i32.const 13)) (global.get $HALF_REBIAS)) (i32.ge_u (local.get $ht) (i32.const 0x7c00)))
            (i32.lt_u (local.get $ht) (i32.const 0x400)))))))
        ;; The 12 scale bytes (and 4 bytes after them, unused: the next block's scales or the d plane).
        (local.set $r (v128.load (i32.add (i32.add (local.get $w) (local.get $p0)) (i32.mul (local.get $b) (i32.const 12)))))
        ;; Bytes 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11 of them; low 6 bits (sc 0..3, m 0..3), low 4 (sc 4..7)
        ;; and high 4 (m 4..7, by a 16-bit shift: the bits it brings in from the next byte are masked off); then the
        ;; top 2 bits of bytes 0..3 (4..7) as bits 4, 5 of sc 4..7 (m 4..7): (b >> 6) << 4 = (b >> 2) & 0x30.
        (local.set $a (i8x16.shuffle 0 1 2 3 8 9 10 11 4 5 6 7 8 9 10 11 (local.get $r) (local.get $r)))
        (local.set $r (v128.or (v128.or
            (v128.and (local.get $a) (v128.const i8x16 63 63 63 63 15 15 15 15 63 63 63 63 0 0 0 0))
            (v128.and (i16x8.shr_u (local.get $a) (i32.const 4)) (v128.const i8x16 0 0 0 0 0 0 0 0 0 0 0 0 15 15 15 15)))
          (v128.and (i16x8.shr_u (i8x16.shuffle 0 0 0 0 0 1 2 3 0 0 0 0 4 5 6 7 (local.get $r) (local.get $r)) (i32.const 2))
            (v128.const i8x16 0 0 0 0 48 48 48 48 0 0 0 0 48 48 48 48))))
        (local.set $xb (i32.add (local.get $xd) (i32.shl (local.get $b) (i32.const 5))))
        (local.set $u (i16x8.extend_low_i8x16_u (local.get $r)))
        (v128.store (local.get $f) (f32x4.mul (f32x4.mul (local.get $d) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $u))))
          (v128.load (local.get $xb))))
        (v128.store offset=16 (local.get $f) (f32x4.mul (f32x4.mul (local.get $d) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $u))))
          (v128.load offset=16 (local.get $xb))))
        (local.set $u (i16x8.extend_high_i8x16_u (local.get $r)))
        (v128.store offset=32 (local.get $f) (f32x4.mul (f32x4.neg (f32x4.mul (local.get $dmin) (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_u (local.get $u)))))
          (v128.load (local.get $xb))))
        (v128.store offset=48 (local.get $f) (f32x4.mul (f32x4.neg (f32x4.mul (local.get $dmin) (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_u (local.get $u)))))
          (v128.load offset=16 (local.get $xb))))
        ;; Step t (0, 1): sub-blocks 4t, 4t + 1 (the low and high nibbles of the 32 bytes at $qp), 4t + 2, 4t + 3 (of the next 32).
        (local.set $qp (i32.add (local.get $w) (i32.shl (local.get $b) (i32.const 7))))
        (local.set $xe (i32.add (local.get $xq) (i32.shl (local.get $b) (i32.const 9))))
        (local.set $xb (i32.add (local.get $xs) (i32.shl (local.get $b) (i32.const 5))))
        (local.set $t (i32.const 0))
        (local.set $fp (local.get $f))
        (block $stepsDone
          (loop $steps
            (br_if $stepsDone (i32.ge_u (local.get $t) (i32.const 2)))
            ;; plain-only: begin
            ;; As 16-bit lanes, lane i of each 16 bytes holds element 2i of sub-block 4t (bits 0..3), 2i + 1
            ;; (8..11), and the same of sub-block 4t + 1 (4..7, 12..15); bytes 16.. hold elements 16...
            (local.set $v0 (v128.load (local.get $qp)))
            (local.set $v1 (v128.load offset=16 (local.get $qp)))
            (local.set $s0 (i32x4.add
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (local.get $v0) (i16x8.splat (i32.const 0x0f))) (v128.load (local.get $xe)))
                (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v0) (i32.const 8)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=16 (local.get $xe))))
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (local.get $v1) (i16x8.splat (i32.const 0x0f))) (v128.load offset=32 (local.get $xe)))
                (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v1) (i32.const 8)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=48 (local.get $xe))))))
            (local.set $s1 (i32x4.add
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v0) (i32.const 4)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=64 (local.get $xe)))
                (i32x4.dot_i16x8_s (i16x8.shr_u (local.get $v0) (i32.const 12)) (v128.load offset=80 (local.get $xe))))
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v1) (i32.const 4)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=96 (local.get $xe)))
                (i32x4.dot_i16x8_s (i16x8.shr_u (local.get $v1) (i32.const 12)) (v128.load offset=112 (local.get $xe))))))
            (local.set $v0 (v128.load offset=32 (local.get $qp)))
            (local.set $v1 (v128.load offset=48 (local.get $qp)))
            (local.set $s2 (i32x4.add
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (local.get $v0) (i16x8.splat (i32.const 0x0f))) (v128.load offset=128 (local.get $xe)))
                (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v0) (i32.const 8)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=144 (local.get $xe))))
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (local.get $v1) (i16x8.splat (i32.const 0x0f))) (v128.load offset=160 (local.get $xe)))
                (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v1) (i32.const 8)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=176 (local.get $xe))))))
            (local.set $s3 (i32x4.add
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v0) (i32.const 4)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=192 (local.get $xe)))
                (i32x4.dot_i16x8_s (i16x8.shr_u (local.get $v0) (i32.const 12)) (v128.load offset=208 (local.get $xe))))
              (i32x4.add (i32x4.dot_i16x8_s (v128.and (i16x8.shr_u (local.get $v1) (i32.const 4)) (i16x8.splat (i32.const 0x0f))) (v128.load offset=224 (local.get $xe)))
                (i32x4.dot_i16x8_s (i16x8.shr_u (local.get $v1) (i32.const 12)) (v128.load offset=240 (local.get $xe))))))
            ;; Across: unpacks of 32 bits (lanes: sub-blocks 0, 1, 0, 1 and 2, 3, 2, 3), then of 64 (0, 1, 2, 3).
            (local.set $s0 (i32x4.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $s0) (local.get $s1))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $s0) (local.get $s1))))
            (local.set $s2 (i32x4.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $s2) (local.get $s3))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $s2) (local.get $s3))))
            (local.set $s0 (i32x4.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s0) (local.get $s2))
              (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s0) (local.get $s2))))
            ;; plain-only: end
            ;; relaxed-only: begin
            ;; Byte j of each 16 holds element j of sub-block 4t (bits 0..3) and of 4t + 1 (4..7); bytes 16.. hold elements 16...
            (local.set $v0 (v128.load (local.get $qp)))
            (local.set $v1 (v128.load offset=16 (local.get $qp)))
            (local.set $s0 (i16x8.add
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load (local.get $xe)) (v128.and (local.get $v0) (i8x16.splat (i32.const 0x0f))))
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=16 (local.get $xe)) (v128.and (local.get $v1) (i8x16.splat (i32.const 0x0f))))))
            (local.set $s1 (i16x8.add
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=64 (local.get $xe)) (v128.and (i16x8.shr_u (local.get $v0) (i32.const 4)) (i8x16.splat (i32.const 0x0f))))
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=80 (local.get $xe)) (v128.and (i16x8.shr_u (local.get $v1) (i32.const 4)) (i8x16.splat (i32.const 0x0f))))))
            (local.set $v0 (v128.load offset=32 (local.get $qp)))
            (local.set $v1 (v128.load offset=48 (local.get $qp)))
            (local.set $s2 (i16x8.add
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=128 (local.get $xe)) (v128.and (local.get $v0) (i8x16.splat (i32.const 0x0f))))
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=144 (local.get $xe)) (v128.and (local.get $v1) (i8x16.splat (i32.const 0x0f))))))
            (local.set $s3 (i16x8.add
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=192 (local.get $xe)) (v128.and (i16x8.shr_u (local.get $v0) (i32.const 4)) (i8x16.splat (i32.const 0x0f))))
              (i16x8.relaxed_dot_i8x16_i7x16_s (v128.load offset=208 (local.get $xe)) (v128.and (i16x8.shr_u (local.get $v1) (i32.const 4)) (i8x16.splat (i32.const 0x0f))))))
            ;; Across, in i16: unpacks of 32 bits (i16 pairs of sub-blocks 0, 1, 0, 1 and 2, 3, 2, 3), then of 64 (0, 1, 2, 3), widened pairwise.
            (local.set $s0 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $s0) (local.get $s1))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $s0) (local.get $s1))))
            (local.set $s2 (i16x8.add (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $s2) (local.get $s3))
              (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $s2) (local.get $s3))))
            (local.set $s0 (i32x4.extadd_pairwise_i16x8_s (i16x8.add (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $s0) (local.get $s2))
              (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $s0) (local.get $s2)))))
            ;; relaxed-only: end
            (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (f32x4.convert_i32x4_s (local.get $s0)) (v128.load (local.get $fp)))))
            (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $xb)) (v128.load offset=32 (local.get $fp)))))
            (local.set $fp (i32.add (local.get $fp) (i32.const 16)))
            (local.set $qp (i32.add (local.get $qp) (i32.const 64)))
            (local.set $xe (i32.add (local.get $xe) (i32.const 256)))
            (local.set $xb (i32.add (local.get $xb) (i32.const 16)))
            (local.set $t (i32.add (local.get $t) (i32.const 1)))
            (br $steps)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br $block)))
    (f32.add (f32.add (f32x4.extract_lane 0 (local.get $acc)) (f32x4.extract_lane 1 (local.get $acc)))
      (f32.add (f32x4.extract_lane 2 (local.get $acc)) (f32x4.extract_lane 3 (local.get $acc)))))

  ;; qmatmul_q8: out[M, N] = x[M, K] . W^T for Q8_0 ($kind 3), Q4_0 (4), Q4_K (5) or Q6_K (6) rows with x quantized
  ;; first (see above). $scratch: K / 2 bytes of per-row factors (four rows' block factors for Q4_0 and
  ;; Q8_0, a super-block's 16 factors for Q4_K (four f32x4), two rows' 16 of a super-block for Q6_K), then per row of x, per block of 32: 64 bytes of i16, 4 of scale
  ;; and 16 for x's total (4 of them used; q8ScratchBytes in src/submit/wasm/ops.ts).
  (func (export "qmatmul_q8") (param $kind i32) (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $scratch i32)
    (local $i i32) (local $j i32) (local $row i32) (local $blocks i32) (local $xqBytes i32) (local $xRow i32) (local $qs i32) (local $nBytes i32)
    (local $next i32) (local $xd i32) (local $xs i32) (local $supers i32) (local $o i32) (local $last i32) (local $d1 i32) (local $d2 i32) (local $d3 i32)
    (local.set $blocks (i32.shr_u (local.get $k) (i32.const 5)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (local.set $qs (i32.add (local.get $scratch) (i32.shl (local.get $blocks) (i32.const 4))))
    ;; Per row of x, per block: 64 bytes of i16, then 4 bytes of scale, then 16 of lane sums (f32).
    (local.set $xqBytes (i32.mul (local.get $blocks) (i32.const 84)))
    (block $qDone
      (loop $qRows
        (br_if $qDone (i32.ge_u (local.get $i) (local.get $m)))
        (local.set $xRow (i32.add (local.get $qs) (i32.mul (local.get $i) (local.get $xqBytes))))
        ;; plain-only: begin
        (call $quantize_x16 (i32.add (local.get $x) (i32.shl (i32.mul (local.get $i) (local.get $k)) (i32.const 2))) (local.get $k)
          (local.get $xRow) (i32.add (local.get $xRow) (i32.shl (local.get $blocks) (i32.const 6)))
          (i32.add (local.get $xRow) (i32.mul (local.get $blocks) (i32.const 68))))
        ;; plain-only: end
        ;; relaxed-only: begin
        ;; Q8_0 (signed weights) keeps the 16-bit layout and the plain kernel; the others get x's bytes.
        (if (i32.eq (local.get $kind) (i32.const 3))
          (then (call $quantize_x16 (i32.add (local.get $x) (i32.shl (i32.mul (local.get $i) (local.get $k)) (i32.const 2))) (local.get $k)
            (local.get $xRow) (i32.add (local.get $xRow) (i32.shl (local.get $blocks) (i32.const 6)))
            (i32.add (local.get $xRow) (i32.mul (local.get $blocks) (i32.const 68)))))
          (else (call $quantize_x8 (i32.add (local.get $x) (i32.shl (i32.mul (local.get $i) (local.get $k)) (i32.const 2))) (local.get $k)
            (local.get $xRow) (i32.add (local.get $xRow) (i32.shl (local.get $blocks) (i32.const 6)))
            (i32.add (local.get $xRow) (i32.mul (local.get $blocks) (i32.const 68))) (i32.eq (local.get $kind) (i32.const 6)))))
        ;; relaxed-only: end
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $qRows)))
    ;; Q8_0 and Q4_0: four weight rows per trip (past the last row, the last again).
    (if (i32.le_u (local.get $kind) (i32.const 4))
      (then
        (local.set $last (i32.sub (local.get $n) (i32.const 1)))
        (block $quadsDone
          (loop $quads
            (br_if $quadsDone (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $row (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))))
            (local.set $o (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 2))))
            (local.set $d1 (select (i32.const 1) (i32.sub (local.get $last) (local.get $j)) (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $n))))
            (local.set $d2 (select (i32.const 2) (i32.sub (local.get $last) (local.get $j)) (i32.lt_u (i32.add (local.get $j) (i32.const 2)) (local.get $n))))
            (local.set $d3 (select (i32.const 3) (i32.sub (local.get $last) (local.get $j)) (i32.lt_u (i32.add (local.get $j) (i32.const 3)) (local.get $n))))
            (call $quad_q8x (local.get $kind) (local.get $qs) (local.get $xqBytes) (local.get $row)
              (i32.mul (local.get $d1) (local.get $rowBytes)) (i32.mul (local.get $d2) (local.get $rowBytes)) (i32.mul (local.get $d3) (local.get $rowBytes))
              (local.get $p0) (local.get $blocks) (local.get $m) (local.get $scratch)
              (local.get $o) (i32.add (local.get $o) (i32.shl (local.get $d1) (i32.const 2)))
              (i32.add (local.get $o) (i32.shl (local.get $d2) (i32.const 2))) (i32.add (local.get $o) (i32.shl (local.get $d3) (i32.const 2)))
              (local.get $nBytes))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $quads)))
        (return)))
    (local.set $xd (i32.shl (local.get $blocks) (i32.const 6)))
    (local.set $xs (i32.mul (local.get $blocks) (i32.const 68)))
    (local.set $supers (i32.shr_u (local.get $k) (i32.const 8)))
    ;; Q6_K: rows j and j + 1 (j alone, paired with itself, when it is the last) against every row of x.
    (if (i32.eq (local.get $kind) (i32.const 6))
      (then
        (block $q6Done
          (loop $q6Pairs
            (br_if $q6Done (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $next (i32.add (local.get $j) (i32.lt_u (i32.add (local.get $j) (i32.const 1)) (local.get $n))))
            (local.set $i (i32.const 0))
            (local.set $xRow (local.get $qs))
            (local.set $o (i32.shl (local.get $j) (i32.const 2)))
            (block $q6xDone
              (loop $q6xRows
                (br_if $q6xDone (i32.ge_u (local.get $i) (local.get $m)))
                (call $dot2_q6_k_q8x (local.get $xRow) (i32.add (local.get $xRow) (local.get $xd))
                  (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (i32.add (local.get $w) (i32.mul (local.get $next) (local.get $rowBytes)))
                  (local.get $supers) (local.get $p0) (local.get $p1) (local.get $p2) (local.get $scratch)
                  (i32.add (i32.add (local.get $out) (local.get $o)) (i32.mul (local.get $i) (local.get $nBytes)))
                  (i32.add (i32.add (local.get $out) (i32.shl (local.get $next) (i32.const 2))) (i32.mul (local.get $i) (local.get $nBytes))))
                (local.set $xRow (i32.add (local.get $xRow) (local.get $xqBytes)))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $q6xRows)))
            (local.set $j (i32.add (local.get $j) (i32.const 2)))
            (br $q6Pairs)))
        (return)))
    ;; Q4_K: one weight row at a time against every row of x (the row's address, x's planes and the
    ;; output's address advance by constant steps).
    (local.set $row (local.get $w))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $i (i32.const 0))
        (local.set $xRow (local.get $qs))
        (local.set $o (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 2))))
        (block $xDone
          (loop $xRows
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (f32.store (local.get $o)
              (call $dot_q4_k_q8x (local.get $xRow) (i32.add (local.get $xRow) (local.get $xd)) (i32.add (local.get $xRow) (local.get $xs))
                (local.get $row) (local.get $supers) (local.get $p0) (local.get $p1) (local.get $scratch)))
            (local.set $xRow (i32.add (local.get $xRow) (local.get $xqBytes)))
            (local.set $o (i32.add (local.get $o) (local.get $nBytes)))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xRows)))
        (local.set $row (i32.add (local.get $row) (local.get $rowBytes)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))

  ;; relaxed-simd: on

  ;; qmatmul: out[M, N] = x[M, K] . W^T for packed rows of $rowBytes bytes (kinds F16 .. Q5_1; F32 rows
  ;; go to wasm/f32.wat's linear_rows). Q8_0 and Q4_0 quants are dotted where they lie ($fused_rows),
  ;; as are Q4_K ($q4_k_rows: scratch of 64 bytes, then K / 2 bytes of x's sub-block sums per row of x)
  ;; and Q6_K ($q6_k_rows). The other block kinds: each row of W is decoded once into the groups form
  ;; in $scratch (K bytes of quants, then K / 16 scales, K / 16 mins, then M * K / 16 sums of x's groups:
  ;; 3K / 2 + M K / 4 bytes) and dotted with every row of x.
  (func (export "qmatmul") (param $kind i32) (param $x i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (param $rowBytes i32) (param $p0 i32) (param $p1 i32) (param $p2 i32) (param $scratch i32)
    (local $i i32) (local $j i32) (local $kBytes i32) (local $nBytes i32) (local $groups i32) (local $gBytes i32)
    (local $ss i32) (local $sm i32) (local $xs i32) (local $q i32) (local $affine i32) (local $xi i32) (local $at i32) (local $r f32) (local $quarter i32) (local $quarterBytes i32)
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (if (i32.le_u (local.get $kind) (i32.const 2))
      (then
        ;; F16 with every |x| below 2^16: the first N - N mod 4 rows four at a time ($dot_halves4: x
        ;; scaled once for four rows), in four quarters read side by side as wasm/f32.wat's linear_rows
        ;; does (call j takes rows j, j + Q, j + 2Q, j + 3Q), each quad serving every row of x; the
        ;; rest, larger x, and BF16 one row at a time below. A row's result is the same either way.
        (if (i32.eq (local.get $kind) (i32.const 1)) (then (if (call $halves_x_fit (local.get $x) (i32.mul (local.get $m) (local.get $k)))
          (then
            (local.set $quarter (i32.shr_u (local.get $n) (i32.const 2)))
            (local.set $quarterBytes (i32.mul (local.get $quarter) (local.get $rowBytes)))
            (block $quadsDone
              (loop $quads
                (br_if $quadsDone (i32.ge_u (local.get $j) (local.get $quarter)))
                (local.set $i (i32.const 0))
                (block $qxDone
                  (loop $qxs
                    (br_if $qxDone (i32.ge_u (local.get $i) (local.get $m)))
                    (call $dot_halves4 (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
                      (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (local.get $quarterBytes) (local.get $k)
                      (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
                      (i32.shl (local.get $quarter) (i32.const 2)))
                    (local.set $i (i32.add (local.get $i) (i32.const 1)))
                    (br $qxs)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $quads)))
            (local.set $j (i32.and (local.get $n) (i32.const -4)))))))
        (block $hRowsDone
          (loop $hRows
            (br_if $hRowsDone (i32.ge_u (local.get $j) (local.get $n)))
            (local.set $i (i32.const 0))
            (block $hxDone
              (loop $hxs
                (br_if $hxDone (i32.ge_u (local.get $i) (local.get $m)))
                (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
                  (call $dot_halves (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
                    (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (local.get $k) (i32.eq (local.get $kind) (i32.const 2))))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $hxs)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $hRows)))
        (return)))
    (if (i32.or (i32.eq (local.get $kind) (i32.const 3)) (i32.eq (local.get $kind) (i32.const 4)))
      (then
        (call $fused_rows (local.get $kind) (local.get $x) (local.get $w) (local.get $out) (local.get $m) (local.get $n) (local.get $k)
          (local.get $rowBytes) (local.get $p0) (local.get $scratch))
        (return)))
    (local.set $groups (i32.shr_u (local.get $k) (i32.const 4)))
    (local.set $gBytes (i32.shl (local.get $groups) (i32.const 2)))
    (local.set $ss (i32.add (local.get $scratch) (local.get $k)))
    (local.set $sm (i32.add (local.get $ss) (local.get $gBytes)))
    (local.set $xs (i32.add (local.get $sm) (local.get $gBytes)))
    (if (i32.eq (local.get $kind) (i32.const 6))
      (then
        (call $q6_k_rows (local.get $x) (local.get $w) (local.get $out) (local.get $m) (local.get $n) (local.get $k)
          (local.get $rowBytes) (local.get $p0) (local.get $p1) (local.get $p2))
        (return)))
    (if (i32.eq (local.get $kind) (i32.const 5))
      (then
        (call $q4_k_rows (local.get $x) (local.get $w) (local.get $out) (local.get $m) (local.get $n) (local.get $k)
          (local.get $rowBytes) (local.get $p0) (local.get $p1) (local.get $scratch) (local.get $xs))
        (return)))
    (local.set $affine (call $affine (local.get $kind)))
    (if (local.get $affine)
      (then
        (block $sumsDone
          (loop $sums
            (br_if $sumsDone (i32.ge_u (local.get $i) (local.get $m)))
            (call $group_sums (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes)))
              (i32.add (local.get $xs) (i32.mul (local.get $i) (local.get $gBytes))) (local.get $groups))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $sums)))))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $q (call $decode_row (local.get $kind) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (local.get $k)
          (local.get $p0) (local.get $p1) (local.get $p2) (local.get $scratch) (local.get $ss) (local.get $sm)))
        (local.set $i (i32.const 0))
        (block $xDone
          (loop $xRows
            (br_if $xDone (i32.ge_u (local.get $i) (local.get $m)))
            (local.set $xi (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $kBytes))))
            (local.set $r (call $dot_groups (local.get $xi) (local.get $q) (local.get $ss) (local.get $groups)))
            (if (local.get $affine)
              (then (local.set $r (f32.add (local.get $r)
                (call $min_terms (local.get $sm) (i32.add (local.get $xs) (i32.mul (local.get $i) (local.get $gBytes))) (local.get $groups))))))
            (local.set $at (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2)))))
            (f32.store (local.get $at) (local.get $r))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $xRows)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows))))

  ;; ---- Dequantization (the tests' view of phase 1) ----
  ;; relaxed-simd: off (bit for bit with decodePackedRow)

  ;; F16 / BF16 rows: k halves, two per word, eight per step ($bf selects bfloat16: bits << 16), with the
  ;; decoders $dot_halves uses; the k mod 8 rest one at a time.
  (func $dequant_halves (param $w i32) (param $out i32) (param $k i32) (param $bf i32)
    (local $end8 i32) (local $end i32) (local $v v128) (local $h i32)
    (local.set $end8 (i32.add (local.get $w) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 1))))
    (local.set $end (i32.add (local.get $w) (i32.shl (local.get $k) (i32.const 1))))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $w) (local.get $end8)))
        (local.set $v (v128.load (local.get $w)))
        (if (local.get $bf)
          (then
            (v128.store (local.get $out) (i32x4.shl (i32x4.extend_low_i16x8_u (local.get $v)) (i32.const 16)))
            (v128.store offset=16 (local.get $out) (i32x4.shl (i32x4.extend_high_i16x8_u (local.get $v)) (i32.const 16))))
          (else
            (if (call $any_special8 (local.get $v))
              (then
                (v128.store (local.get $out) (call $half4 (i32x4.extend_low_i16x8_u (local.get $v))))
                (v128.store offset=16 (local.get $out) (call $half4 (i32x4.extend_high_i16x8_u (local.get $v)))))
              (else
                (v128.store (local.get $out) (call $finite_half4 (i32x4.extend_low_i16x8_s (local.get $v))))
                (v128.store offset=16 (local.get $out) (call $finite_half4 (i32x4.extend_high_i16x8_s (local.get $v))))))))
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

  ;; Dequantizes one packed row of k elements of `kind` at $w into k floats at $out (F32 rows are copied;
  ;; block kinds go through the groups form in $scratch, 3K / 2 bytes): q * scale (+ min), GGML's order.
  (func (export "dequant_row") (param $kind i32) (param $w i32) (param $out i32) (param $k i32) (param $p0 i32) (param $p1 i32) (param $p2 i32)
    (param $scratch i32)
    (local $q i32) (local $ss i32) (local $sm i32) (local $end i32) (local $v v128) (local $h v128) (local $s v128) (local $mn v128)
    (local $affine i32)
    (if (i32.eqz (local.get $kind))
      (then (memory.copy (local.get $out) (local.get $w) (i32.shl (local.get $k) (i32.const 2))) (return)))
    (if (i32.le_u (local.get $kind) (i32.const 2))
      (then (call $dequant_halves (local.get $w) (local.get $out) (local.get $k) (i32.eq (local.get $kind) (i32.const 2))) (return)))
    (local.set $ss (i32.add (local.get $scratch) (local.get $k)))
    (local.set $sm (i32.add (local.get $ss) (i32.shr_u (local.get $k) (i32.const 2))))
    (local.set $affine (call $affine (local.get $kind)))
    (local.set $q (call $decode_row (local.get $kind) (local.get $w) (local.get $k) (local.get $p0) (local.get $p1) (local.get $p2)
      (local.get $scratch) (local.get $ss) (local.get $sm)))
    (local.set $end (i32.add (local.get $q) (local.get $k)))
    (block $done
      (loop $group
        (br_if $done (i32.ge_u (local.get $q) (local.get $end)))
        (local.set $v (v128.load (local.get $q)))
        (local.set $s (v128.load32_splat (local.get $ss)))
        (local.set $mn (select (v128.load32_splat (local.get $sm)) (v128.const i32x4 0x80000000 0x80000000 0x80000000 0x80000000) (local.get $affine)))
        ;; Without a min the product is stored as it is (q * scale + -0 is q * scale, bit for bit).
        (local.set $h (i16x8.extend_low_i8x16_s (local.get $v)))
        (v128.store (local.get $out)
          (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (local.get $s)) (local.get $mn)))
        (v128.store offset=16 (local.get $out)
          (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (local.get $s)) (local.get $mn)))
        (local.set $h (i16x8.extend_high_i8x16_s (local.get $v)))
        (v128.store offset=32 (local.get $out)
          (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (local.get $s)) (local.get $mn)))
        (v128.store offset=48 (local.get $out)
          (f32x4.add (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (local.get $s)) (local.get $mn)))
        (local.set $q (i32.add (local.get $q) (i32.const 16)))
        (local.set $ss (i32.add (local.get $ss) (i32.const 4)))
        (local.set $sm (i32.add (local.get $sm) (i32.const 4)))
        (local.set $out (i32.add (local.get $out) (i32.const 64)))
        (br $group))))
  ;; relaxed-simd: on
)

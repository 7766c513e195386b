;; f32 kernels of the host provider (WebAssembly 128-bit SIMD), the fast twins of the host() references
;; in src/submit/ops/*.ts. Assembled at build time by scripts/wat.ts; driven by src/submit/wasm/ops.ts.
;;
;; ABI: every pointer is a byte address in the imported memory (the host provider's HostMemory, where
;; every tensor lives), every size a count of elements; operands are contiguous row-major f32. Kernels
;; write only their outputs (and the scratch they are given), allocate nothing and never grow the memory.
;; Accumulation is f32 in four lanes (the references accumulate in f64): lane sums are combined at the end
;; by $hsum. Loops run over whole 4-element vectors, then a scalar tail takes the K mod 4 rest.
(module
  (import "env" "memory" (memory 1))

  ;; The sum of the four lanes of v: (l0 + l1) + (l2 + l3).
  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; Dot product of k floats at $x and $y: two vector accumulators over 8-element steps, one 4-element
  ;; step, then the scalar tail.
  (func $dot (export "dot") (param $x i32) (param $y i32) (param $k i32) (result f32)
    (local $end i32) (local $end8 i32) (local $end4 i32) (local $acc0 v128) (local $acc1 v128) (local $s f32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2))))
    (local.set $end8 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -4)) (i32.const 2))))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $x) (local.get $end8)))
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (v128.load (local.get $x)) (v128.load (local.get $y)))))
        (local.set $acc1 (f32x4.add (local.get $acc1)
          (f32x4.mul (v128.load offset=16 (local.get $x)) (v128.load offset=16 (local.get $y)))))
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (local.set $y (i32.add (local.get $y) (i32.const 32)))
        (br $step8)))
    (if (i32.lt_u (local.get $x) (local.get $end4))
      (then
        (local.set $acc0 (f32x4.add (local.get $acc0) (f32x4.mul (v128.load (local.get $x)) (v128.load (local.get $y)))))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $y (i32.add (local.get $y) (i32.const 16)))))
    (local.set $s (call $hsum (f32x4.add (local.get $acc0) (local.get $acc1))))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $x)) (f32.load (local.get $y)))))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (local.set $y (i32.add (local.get $y) (i32.const 4)))
        (br $tail)))
    (local.get $s))

  ;; out[r] = x . w_r for the four rows w_r = $w + r * $rowBytes (r = 0..3), written at $out + r * $outStep.
  ;; One load of x feeds four accumulators (matrix-vector: each weight byte is read once).
  (func $dot4 (param $x i32) (param $w i32) (param $rowBytes i32) (param $k i32) (param $out i32) (param $outStep i32)
    (local $w1 i32) (local $w2 i32) (local $w3 i32) (local $end4 i32) (local $end8 i32) (local $end i32) (local $xv v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    ;; The relaxed build's second accumulators (see $step8).
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local $s0 f32) (local $s1 f32) (local $s2 f32) (local $s3 f32) (local $xs f32)
    (local.set $w1 (i32.add (local.get $w) (local.get $rowBytes)))
    (local.set $w2 (i32.add (local.get $w1) (local.get $rowBytes)))
    (local.set $w3 (i32.add (local.get $w2) (local.get $rowBytes)))
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -4)) (i32.const 2))))
    (local.set $end8 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 2))))
    ;; Two vectors per trip (the same additions, in the same order, as two trips of $step below): half
    ;; the loop control and pointer updates per element.
    ;; The relaxed build adds each trip's second vector into a second accumulator per row ($b0..$b3, added
    ;; to $a0..$a3 after the loops): its relaxed_madd is fused on x64 (vfmadd, 4-5 cycles of latency where
    ;; the plain build's chain is one f32x4.add, 3 cycles; its multiply is off the chain), so with one
    ;; accumulator per row the fused kernel waited on its chain: tiny-llama's matrix-vector decode ran
    ;; 1.1-1.3x slower than the plain build (Node 20, AMD EPYC, one process, interleaved). Two chains per
    ;; row hide that latency. The plain build keeps its one chain per row (no faster with two here).
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $x) (local.get $end8)))
        (local.set $xv (v128.load (local.get $x)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $xv) (v128.load (local.get $w)))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $xv) (v128.load (local.get $w1)))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xv) (v128.load (local.get $w2)))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $xv) (v128.load (local.get $w3)))))
        (local.set $xv (v128.load offset=16 (local.get $x)))
        ;; plain-only: begin
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w)))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w1)))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w2)))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w3)))))
        ;; plain-only: end
        ;; relaxed-only: begin
        (local.set $b0 (f32x4.add (local.get $b0) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w)))))
        (local.set $b1 (f32x4.add (local.get $b1) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w1)))))
        (local.set $b2 (f32x4.add (local.get $b2) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w2)))))
        (local.set $b3 (f32x4.add (local.get $b3) (f32x4.mul (local.get $xv) (v128.load offset=16 (local.get $w3)))))
        ;; relaxed-only: end
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (local.set $w (i32.add (local.get $w) (i32.const 32)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 32)))
        (local.set $w2 (i32.add (local.get $w2) (i32.const 32)))
        (local.set $w3 (i32.add (local.get $w3) (i32.const 32)))
        (br $step8)))
    (block $done4
      (loop $step
        (br_if $done4 (i32.ge_u (local.get $x) (local.get $end4)))
        (local.set $xv (v128.load (local.get $x)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $xv) (v128.load (local.get $w)))))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $xv) (v128.load (local.get $w1)))))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xv) (v128.load (local.get $w2)))))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $xv) (v128.load (local.get $w3)))))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 16)))
        (local.set $w2 (i32.add (local.get $w2) (i32.const 16)))
        (local.set $w3 (i32.add (local.get $w3) (i32.const 16)))
        (br $step)))
    ;; relaxed-only: begin
    (local.set $a0 (f32x4.add (local.get $a0) (local.get $b0)))
    (local.set $a1 (f32x4.add (local.get $a1) (local.get $b1)))
    (local.set $a2 (f32x4.add (local.get $a2) (local.get $b2)))
    (local.set $a3 (f32x4.add (local.get $a3) (local.get $b3)))
    ;; relaxed-only: end
    ;; The four rows' $hsum at once, with the same additions in the same order: pair the lanes (0, 1) and
    ;; (2, 3) of two rows per vector and add, then add the pair sums of all four rows in one vector.
    (local.set $a0 (f32x4.add
      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a1))
      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a1))))
    (local.set $a2 (f32x4.add
      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a2) (local.get $a3))
      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a2) (local.get $a3))))
    (local.set $a0 (f32x4.add
      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $a0) (local.get $a2))
      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $a0) (local.get $a2))))
    (local.set $s0 (f32x4.extract_lane 0 (local.get $a0)))
    (local.set $s1 (f32x4.extract_lane 1 (local.get $a0)))
    (local.set $s2 (f32x4.extract_lane 2 (local.get $a0)))
    (local.set $s3 (f32x4.extract_lane 3 (local.get $a0)))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $xs (f32.load (local.get $x)))
        (local.set $s0 (f32.add (local.get $s0) (f32.mul (local.get $xs) (f32.load (local.get $w)))))
        (local.set $s1 (f32.add (local.get $s1) (f32.mul (local.get $xs) (f32.load (local.get $w1)))))
        (local.set $s2 (f32.add (local.get $s2) (f32.mul (local.get $xs) (f32.load (local.get $w2)))))
        (local.set $s3 (f32.add (local.get $s3) (f32.mul (local.get $xs) (f32.load (local.get $w3)))))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (local.set $w (i32.add (local.get $w) (i32.const 4)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 4)))
        (local.set $w2 (i32.add (local.get $w2) (i32.const 4)))
        (local.set $w3 (i32.add (local.get $w3) (i32.const 4)))
        (br $tail)))
    (f32.store (local.get $out) (local.get $s0))
    (f32.store (i32.add (local.get $out) (local.get $outStep)) (local.get $s1))
    (f32.store (i32.add (local.get $out) (i32.shl (local.get $outStep) (i32.const 1))) (local.get $s2))
    (f32.store (i32.add (local.get $out) (i32.mul (local.get $outStep) (i32.const 3))) (local.get $s3)))

  ;; x . w with the arithmetic of one row of $dot4 (one vector accumulator, in the relaxed build two as
  ;; there, its horizontal sum, then the K mod 4 tail in order): a row's result does not depend on whether
  ;; it fell in a group of four, so the rows of a weight split across bindings (one call per part) sum
  ;; exactly as the unsplit weight's do.
  (func $dot1 (param $x i32) (param $w i32) (param $k i32) (result f32)
    (local $end4 i32) (local $end8 i32) (local $end i32) (local $acc v128) (local $acc2 v128) (local $s f32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $k) (i32.const 2))))
    (local.set $end4 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -4)) (i32.const 2))))
    (local.set $end8 (i32.add (local.get $x) (i32.shl (i32.and (local.get $k) (i32.const -8)) (i32.const 2))))
    (block $done8
      (loop $step8
        (br_if $done8 (i32.ge_u (local.get $x) (local.get $end8)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $x)) (v128.load (local.get $w)))))
        ;; plain-only: begin
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load offset=16 (local.get $x)) (v128.load offset=16 (local.get $w)))))
        ;; plain-only: end
        ;; relaxed-only: begin
        (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (v128.load offset=16 (local.get $x)) (v128.load offset=16 (local.get $w)))))
        ;; relaxed-only: end
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (local.set $w (i32.add (local.get $w) (i32.const 32)))
        (br $step8)))
    (block $done4
      (loop $step
        (br_if $done4 (i32.ge_u (local.get $x) (local.get $end4)))
        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (v128.load (local.get $x)) (v128.load (local.get $w)))))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (br $step)))
    ;; relaxed-only: begin
    (local.set $acc (f32x4.add (local.get $acc) (local.get $acc2)))
    ;; relaxed-only: end
    (local.set $s (call $hsum (local.get $acc)))
    (block $done
      (loop $tail
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $x)) (f32.load (local.get $w)))))
        (local.set $x (i32.add (local.get $x) (i32.const 4)))
        (local.set $w (i32.add (local.get $w) (i32.const 4)))
        (br $tail)))
    (local.get $s))

  ;; matmul_nt: out[M, N] = a[M, K] . w[N, K]^T. Four weight rows at a time share each load of a row of
  ;; a; the N mod 4 last rows go one at a time, with the same arithmetic per row ($dot1).
  (func (export "matmul_nt") (param $a i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (call $linear_rows (local.get $a) (local.get $w) (local.get $out) (local.get $m) (local.get $n) (local.get $k)
      (i32.shl (local.get $k) (i32.const 2))))

  ;; out[i, j] = a_i . w_j over rows of $rowBytes bytes (f32 weights, possibly inside a packed row).
  ;; The first N - N mod 4 rows go in four quarters read side by side: call j takes rows j, j + Q, j + 2Q
  ;; and j + 3Q (Q = a quarter of them), so the weights stream as four long sequential runs that the
  ;; CPU's prefetchers follow from one call to the next, where four adjacent rows (a few cache lines each
  ;; for small K) would restart four short runs per call. Matrix-vector decode is bound by that stream:
  ;; tiny-llama's 13.6 MB per token ran about 2x faster (one process, interleaved, bit-identical results).
  ;; Every row keeps its own arithmetic ($dot4 = $dot1 per row), whichever quarter it falls in.
  (func $linear_rows (export "linear_rows") (param $a i32) (param $w i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32) (param $rowBytes i32)
    (local $i i32) (local $j i32) (local $aRow i32) (local $oRow i32) (local $n4 i32) (local $kBytes i32) (local $quarter i32) (local $quarterBytes i32)
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $quarter (i32.shr_u (local.get $n4) (i32.const 2)))
    (local.set $quarterBytes (i32.mul (local.get $quarter) (local.get $rowBytes)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $i) (local.get $m)))
        (local.set $aRow (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $kBytes))))
        (local.set $oRow (i32.add (local.get $out) (i32.shl (i32.mul (local.get $i) (local.get $n)) (i32.const 2))))
        (local.set $j (i32.const 0))
        (block $quadsDone
          (loop $quads
            (br_if $quadsDone (i32.ge_u (local.get $j) (local.get $quarter)))
            (call $dot4 (local.get $aRow) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes)))
              (local.get $quarterBytes) (local.get $k) (i32.add (local.get $oRow) (i32.shl (local.get $j) (i32.const 2))) (i32.shl (local.get $quarter) (i32.const 2)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $quads)))
        (local.set $j (local.get $n4))
        (block $singlesDone
          (loop $singles
            (br_if $singlesDone (i32.ge_u (local.get $j) (local.get $n)))
            (f32.store (i32.add (local.get $oRow) (i32.shl (local.get $j) (i32.const 2)))
              (call $dot1 (local.get $aRow) (i32.add (local.get $w) (i32.mul (local.get $j) (local.get $rowBytes))) (local.get $k)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $singles)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))

  ;; matmul: out[M, N] = a[M, K] . b[K, N]. Register-blocked: a tile of 4 rows x 8 columns of out lives in
  ;; eight vector accumulators while k runs; each step splats one element of each of the 4 rows of a and
  ;; loads 8 consecutive elements of a row of b (an outer-product update). Rows of a go in panels of
  ;; PANEL_ROWS so the panel stays in cache while every column strip of b passes over it. Rows past the
  ;; last whole tile use a 1 x 8 tile; the N mod 8 last columns are plain dot products down b's columns.
  (func (export "matmul") (param $a i32) (param $b i32) (param $out i32) (param $m i32) (param $n i32) (param $k i32)
    (local $p i32) (local $pEnd i32) (local $i i32) (local $j i32) (local $n8 i32) (local $nBytes i32) (local $kBytes i32)
    (local $m4 i32)
    (local.set $nBytes (i32.shl (local.get $n) (i32.const 2)))
    (local.set $kBytes (i32.shl (local.get $k) (i32.const 2)))
    (local.set $n8 (i32.and (local.get $n) (i32.const -8)))
    (block $panelsDone
      (loop $panels
        (br_if $panelsDone (i32.ge_u (local.get $p) (local.get $m)))
        (local.set $pEnd (select (i32.add (local.get $p) (i32.const 64)) (local.get $m)
          (i32.lt_u (i32.add (local.get $p) (i32.const 64)) (local.get $m))))
        (local.set $m4 (i32.add (local.get $p) (i32.and (i32.sub (local.get $pEnd) (local.get $p)) (i32.const -4))))
        (local.set $j (i32.const 0))
        (block $stripsDone
          (loop $strips
            (br_if $stripsDone (i32.ge_u (local.get $j) (local.get $n8)))
            (local.set $i (local.get $p))
            (block $tilesDone
              (loop $tiles
                (br_if $tilesDone (i32.ge_u (local.get $i) (local.get $m4)))
                (call $tile4x8
                  (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $kBytes)))
                  (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2)))
                  (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
                  (local.get $k) (local.get $kBytes) (local.get $nBytes))
                (local.set $i (i32.add (local.get $i) (i32.const 4)))
                (br $tiles)))
            (block $onesDone
              (loop $ones
                (br_if $onesDone (i32.ge_u (local.get $i) (local.get $pEnd)))
                (call $tile1x8
                  (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $kBytes)))
                  (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2)))
                  (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
                  (local.get $k) (local.get $nBytes))
                (local.set $i (i32.add (local.get $i) (i32.const 1)))
                (br $ones)))
            (local.set $j (i32.add (local.get $j) (i32.const 8)))
            (br $strips)))
        (local.set $p (local.get $pEnd))
        (br $panels)))
    ;; The N mod 8 last columns.
    (local.set $i (i32.const 0))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $i) (local.get $m)))
        (local.set $j (local.get $n8))
        (block $colsDone
          (loop $cols
            (br_if $colsDone (i32.ge_u (local.get $j) (local.get $n)))
            (f32.store (i32.add (local.get $out) (i32.add (i32.mul (local.get $i) (local.get $nBytes)) (i32.shl (local.get $j) (i32.const 2))))
              (call $column_dot (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $kBytes)))
                (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))) (local.get $k) (local.get $nBytes)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $cols)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))

  ;; sum over k of a[k] * b[k * stride] (one column of b).
  (func $column_dot (param $a i32) (param $b i32) (param $k i32) (param $stride i32) (result f32)
    (local $s f32) (local $end i32)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 2))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $a)) (f32.load (local.get $b)))))
        (local.set $a (i32.add (local.get $a) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (local.get $stride)))
        (br $step)))
    (local.get $s))

  ;; out[0..4, 0..8] = a[0..4, :] . b[:, 0..8]; rows of a are $kBytes apart, rows of b and out $nBytes.
  (func $tile4x8 (param $a i32) (param $b i32) (param $out i32) (param $k i32) (param $kBytes i32) (param $nBytes i32)
    (local $end i32) (local $a1 i32) (local $a2 i32) (local $a3 i32) (local $b0 v128) (local $b1 v128) (local $x v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $a1 (i32.add (local.get $a) (local.get $kBytes)))
    (local.set $a2 (i32.add (local.get $a1) (local.get $kBytes)))
    (local.set $a3 (i32.add (local.get $a2) (local.get $kBytes)))
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 2))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $b0 (v128.load (local.get $b)))
        (local.set $b1 (v128.load offset=16 (local.get $b)))
        (local.set $x (v128.load32_splat (local.get $a)))
        (local.set $c00 (f32x4.add (local.get $c00) (f32x4.mul (local.get $x) (local.get $b0))))
        (local.set $c01 (f32x4.add (local.get $c01) (f32x4.mul (local.get $x) (local.get $b1))))
        (local.set $x (v128.load32_splat (local.get $a1)))
        (local.set $c10 (f32x4.add (local.get $c10) (f32x4.mul (local.get $x) (local.get $b0))))
        (local.set $c11 (f32x4.add (local.get $c11) (f32x4.mul (local.get $x) (local.get $b1))))
        (local.set $x (v128.load32_splat (local.get $a2)))
        (local.set $c20 (f32x4.add (local.get $c20) (f32x4.mul (local.get $x) (local.get $b0))))
        (local.set $c21 (f32x4.add (local.get $c21) (f32x4.mul (local.get $x) (local.get $b1))))
        (local.set $x (v128.load32_splat (local.get $a3)))
        (local.set $c30 (f32x4.add (local.get $c30) (f32x4.mul (local.get $x) (local.get $b0))))
        (local.set $c31 (f32x4.add (local.get $c31) (f32x4.mul (local.get $x) (local.get $b1))))
        (local.set $a (i32.add (local.get $a) (i32.const 4)))
        (local.set $a1 (i32.add (local.get $a1) (i32.const 4)))
        (local.set $a2 (i32.add (local.get $a2) (i32.const 4)))
        (local.set $a3 (i32.add (local.get $a3) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (local.get $nBytes)))
        (br $step)))
    (v128.store (local.get $out) (local.get $c00))
    (v128.store offset=16 (local.get $out) (local.get $c01))
    (local.set $out (i32.add (local.get $out) (local.get $nBytes)))
    (v128.store (local.get $out) (local.get $c10))
    (v128.store offset=16 (local.get $out) (local.get $c11))
    (local.set $out (i32.add (local.get $out) (local.get $nBytes)))
    (v128.store (local.get $out) (local.get $c20))
    (v128.store offset=16 (local.get $out) (local.get $c21))
    (local.set $out (i32.add (local.get $out) (local.get $nBytes)))
    (v128.store (local.get $out) (local.get $c30))
    (v128.store offset=16 (local.get $out) (local.get $c31)))

  ;; out[0, 0..8] = a[0, :] . b[:, 0..8].
  (func $tile1x8 (param $a i32) (param $b i32) (param $out i32) (param $k i32) (param $nBytes i32)
    (local $end i32) (local $x v128) (local $c0 v128) (local $c1 v128)
    (local.set $end (i32.add (local.get $a) (i32.shl (local.get $k) (i32.const 2))))
    (block $done
      (loop $step
        (br_if $done (i32.ge_u (local.get $a) (local.get $end)))
        (local.set $x (v128.load32_splat (local.get $a)))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $x) (v128.load (local.get $b)))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $x) (v128.load offset=16 (local.get $b)))))
        (local.set $a (i32.add (local.get $a) (i32.const 4)))
        (local.set $b (i32.add (local.get $b) (local.get $nBytes)))
        (br $step)))
    (v128.store (local.get $out) (local.get $c0))
    (v128.store offset=16 (local.get $out) (local.get $c1)))

  ;; rmsnorm: out[r, c] = w[c] * (x[r, c] * inv_r), inv_r = 1 / sqrt(mean_c x[r, c]^2 + eps).
  (func (export "rmsnorm") (param $x i32) (param $w i32) (param $out i32) (param $rows i32) (param $cols i32) (param $eps f32)
    (local $r i32) (local $inv f32) (local $iv v128) (local $c i32) (local $cols4 i32) (local $rowBytes i32)
    (local.set $cols4 (i32.and (local.get $cols) (i32.const -4)))
    (local.set $rowBytes (i32.shl (local.get $cols) (i32.const 2)))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $inv (f32.div (f32.const 1)
          (f32.sqrt (f32.add (f32.div (call $dot (local.get $x) (local.get $x) (local.get $cols)) (f32.convert_i32_u (local.get $cols)))
            (local.get $eps)))))
        (local.set $iv (f32x4.splat (local.get $inv)))
        (local.set $c (i32.const 0))
        (block $vecDone
          (loop $vec
            (br_if $vecDone (i32.ge_u (local.get $c) (local.get $cols4)))
            (v128.store (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 2)))
              (f32x4.mul (v128.load (i32.add (local.get $w) (i32.shl (local.get $c) (i32.const 2))))
                (f32x4.mul (local.get $iv) (v128.load (i32.add (local.get $x) (i32.shl (local.get $c) (i32.const 2)))))))
            (local.set $c (i32.add (local.get $c) (i32.const 4)))
            (br $vec)))
        (block $tailDone
          (loop $tail
            (br_if $tailDone (i32.ge_u (local.get $c) (local.get $cols)))
            (f32.store (i32.add (local.get $out) (i32.shl (local.get $c) (i32.const 2)))
              (f32.mul (f32.load (i32.add (local.get $w) (i32.shl (local.get $c) (i32.const 2))))
                (f32.mul (local.get $inv) (f32.load (i32.add (local.get $x) (i32.shl (local.get $c) (i32.const 2)))))))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))
            (br $tail)))
        (local.set $x (i32.add (local.get $x) (local.get $rowBytes)))
        (local.set $out (i32.add (local.get $out) (local.get $rowBytes)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; e^x in four lanes: x = n ln2 + r with n = nearest(x / ln2) and |r| <= ln2 / 2, e^r by its Taylor
  ;; series to r^7 (truncation below 6e-9, under half an f32 ulp), times 2^n built in the exponent bits.
  ;; Inputs are clamped to [-87, 88], where 2^n is a normal f32 (e^-87 ~ 1.6e-38: 0 for a softmax).
  (func $exp4 (param $x v128) (result v128)
    (local $n v128) (local $r v128) (local $p v128)
    (local.set $x (f32x4.min (f32x4.max (local.get $x) (f32x4.splat (f32.const -87))) (f32x4.splat (f32.const 88))))
    (local.set $n (f32x4.nearest (f32x4.mul (local.get $x) (f32x4.splat (f32.const 1.44269504088896341)))))
    ;; ln 2 split in a high part exact in 16 bits and the rest, so n * ln2_hi is exact.
    (local.set $r (f32x4.sub (f32x4.sub (local.get $x) (f32x4.mul (local.get $n) (f32x4.splat (f32.const 0.693145751953125))))
      (f32x4.mul (local.get $n) (f32x4.splat (f32.const 1.428606765330187e-06)))))
    (local.set $p (f32x4.splat (f32.const 1.984126984126984e-04)))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1.388888888888889e-03))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 8.333333333333333e-03))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 4.166666666666667e-02))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1.666666666666667e-01))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 0.5))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1))))
    (local.set $p (f32x4.add (f32x4.mul (local.get $p) (local.get $r)) (f32x4.splat (f32.const 1))))
    (f32x4.mul (local.get $p)
      (i32x4.shl (i32x4.add (i32x4.trunc_sat_f32x4_s (local.get $n)) (i32x4.splat (i32.const 127))) (i32.const 23))))

  ;; e^x of one value, through lane 0 of $exp4 (the same arithmetic as the vector path).
  (func $exp1 (param $x f32) (result f32)
    (f32x4.extract_lane 0 (call $exp4 (f32x4.splat (local.get $x)))))

  ;; out[i] = e^(x[i] - max) for i < n at $x -> $out; returns the sum of the written values.
  (func $exp_shift (param $x i32) (param $out i32) (param $n i32) (param $max f32) (result f32)
    (local $i i32) (local $n4 i32) (local $mv v128) (local $e v128) (local $acc v128) (local $s f32) (local $es f32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $mv (f32x4.splat (local.get $max)))
    (block $vecDone
      (loop $vec
        (br_if $vecDone (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $e (call $exp4 (f32x4.sub (v128.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))) (local.get $mv))))
        (v128.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))) (local.get $e))
        (local.set $acc (f32x4.add (local.get $acc) (local.get $e)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $vec)))
    (local.set $s (call $hsum (local.get $acc)))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $es (call $exp1 (f32.sub (f32.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2)))) (local.get $max))))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))) (local.get $es))
        (local.set $s (f32.add (local.get $s) (local.get $es)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail)))
    (local.get $s))

  ;; The largest of n >= 1 values at $x.
  (func $max (param $x i32) (param $n i32) (result f32)
    (local $i i32) (local $n4 i32) (local $mv v128) (local $m f32)
    (local.set $m (f32.load (local.get $x)))
    (local.set $mv (f32x4.splat (local.get $m)))
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $vecDone
      (loop $vec
        (br_if $vecDone (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $mv (f32x4.max (local.get $mv) (v128.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2))))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $vec)))
    (local.set $m (f32.max (f32.max (f32x4.extract_lane 0 (local.get $mv)) (f32x4.extract_lane 1 (local.get $mv)))
      (f32.max (f32x4.extract_lane 2 (local.get $mv)) (f32x4.extract_lane 3 (local.get $mv)))))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $m (f32.max (local.get $m) (f32.load (i32.add (local.get $x) (i32.shl (local.get $i) (i32.const 2))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail)))
    (local.get $m))

  ;; v[i] *= s for i < n.
  (func $scale_in_place (param $v i32) (param $n i32) (param $s f32)
    (local $i i32) (local $n4 i32) (local $sv v128) (local $at i32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (local.set $sv (f32x4.splat (local.get $s)))
    (block $vecDone
      (loop $vec
        (br_if $vecDone (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $at (i32.add (local.get $v) (i32.shl (local.get $i) (i32.const 2))))
        (v128.store (local.get $at) (f32x4.mul (v128.load (local.get $at)) (local.get $sv)))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $vec)))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $at (i32.add (local.get $v) (i32.shl (local.get $i) (i32.const 2))))
        (f32.store (local.get $at) (f32.mul (f32.load (local.get $at)) (local.get $s)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail))))

  ;; softmax over each row of x[rows, cols] into out.
  (func (export "softmax") (param $x i32) (param $out i32) (param $rows i32) (param $cols i32)
    (local $r i32) (local $rowBytes i32)
    (local.set $rowBytes (i32.shl (local.get $cols) (i32.const 2)))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
        (call $scale_in_place (local.get $out) (local.get $cols)
          (f32.div (f32.const 1) (call $exp_shift (local.get $x) (local.get $out) (local.get $cols) (call $max (local.get $x) (local.get $cols)))))
        (local.set $x (i32.add (local.get $x) (local.get $rowBytes)))
        (local.set $out (i32.add (local.get $out) (local.get $rowBytes)))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $row))))

  ;; silu_mul: out[i] = a[i] / (1 + e^-a[i]) * b[i].
  (func (export "silu_mul") (param $a i32) (param $b i32) (param $out i32) (param $n i32)
    (local $i i32) (local $n4 i32) (local $x v128) (local $xs f32) (local $at i32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $vecDone
      (loop $vec
        (br_if $vecDone (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $at (i32.shl (local.get $i) (i32.const 2)))
        (local.set $x (v128.load (i32.add (local.get $a) (local.get $at))))
        (v128.store (i32.add (local.get $out) (local.get $at))
          (f32x4.mul (f32x4.div (local.get $x) (f32x4.add (f32x4.splat (f32.const 1)) (call $exp4 (f32x4.neg (local.get $x)))))
            (v128.load (i32.add (local.get $b) (local.get $at)))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $vec)))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $at (i32.shl (local.get $i) (i32.const 2)))
        (local.set $xs (f32.load (i32.add (local.get $a) (local.get $at))))
        (f32.store (i32.add (local.get $out) (local.get $at))
          (f32.mul (f32.div (local.get $xs) (f32.add (f32.const 1) (call $exp1 (f32.neg (local.get $xs)))))
            (f32.load (i32.add (local.get $b) (local.get $at)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail))))

  ;; Elementwise out = a + b (also in place: $out may be $a).
  (func (export "add") (param $a i32) (param $b i32) (param $out i32) (param $n i32)
    (local $i i32) (local $n4 i32) (local $at i32)
    (local.set $n4 (i32.and (local.get $n) (i32.const -4)))
    (block $vecDone
      (loop $vec
        (br_if $vecDone (i32.ge_u (local.get $i) (local.get $n4)))
        (local.set $at (i32.shl (local.get $i) (i32.const 2)))
        (v128.store (i32.add (local.get $out) (local.get $at))
          (f32x4.add (v128.load (i32.add (local.get $a) (local.get $at))) (v128.load (i32.add (local.get $b) (local.get $at)))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $vec)))
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $at (i32.shl (local.get $i) (i32.const 2)))
        (f32.store (i32.add (local.get $out) (local.get $at))
          (f32.add (f32.load (i32.add (local.get $a) (local.get $at))) (f32.load (i32.add (local.get $b) (local.get $at)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail))))

  ;; rope: rotates every head of x[count, heads * headDim] in place by the per-row tables at $table:
  ;; row t has cos then sin, each headDim floats, laid out for the pairing. Normal pairing (2i, 2i+1):
  ;; cos = [c0, c0, c1, c1, ...], sin = [-s0, s0, -s1, s1, ...], and x' = x * cos + swap(x) * sin where
  ;; swap exchanges the two elements of each pair. NEOX pairing (i, i + headDim / 2): the first half of
  ;; each table holds c_i (and s_i) once; x'_lo = x_lo * c - x_hi * s, x'_hi = x_lo * s + x_hi * c.
  (func (export "rope") (param $x i32) (param $table i32) (param $count i32) (param $heads i32) (param $headDim i32) (param $neox i32)
    (local $t i32) (local $h i32) (local $i i32) (local $head i32) (local $cos i32) (local $sin i32) (local $dim4 i32)
    (local $half i32) (local $half4 i32) (local $lo v128) (local $hi v128) (local $c v128) (local $s v128)
    (local $xl f32) (local $xh f32) (local $cs f32) (local $ss f32) (local $hb i32)
    (local.set $dim4 (i32.and (local.get $headDim) (i32.const -4)))
    (local.set $half (i32.shr_u (local.get $headDim) (i32.const 1)))
    (local.set $half4 (i32.and (local.get $half) (i32.const -4)))
    (local.set $hb (i32.shl (local.get $half) (i32.const 2)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $t) (local.get $count)))
        (local.set $cos (i32.add (local.get $table) (i32.shl (i32.mul (local.get $t) (local.get $headDim)) (i32.const 3))))
        (local.set $sin (i32.add (local.get $cos) (i32.shl (local.get $headDim) (i32.const 2))))
        (local.set $h (i32.const 0))
        (block $headsDone
          (loop $headsLoop
            (br_if $headsDone (i32.ge_u (local.get $h) (local.get $heads)))
            (local.set $head (i32.add (local.get $x)
              (i32.shl (i32.add (i32.mul (i32.mul (local.get $t) (local.get $heads)) (local.get $headDim)) (i32.mul (local.get $h) (local.get $headDim))) (i32.const 2))))
            (local.set $i (i32.const 0))
            (if (local.get $neox)
              (then
                (block $nvDone
                  (loop $nv
                    (br_if $nvDone (i32.ge_u (local.get $i) (local.get $half4)))
                    (local.set $lo (v128.load (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $hi (v128.load (i32.add (i32.add (local.get $head) (local.get $hb)) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $c (v128.load (i32.add (local.get $cos) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $s (v128.load (i32.add (local.get $sin) (i32.shl (local.get $i) (i32.const 2)))))
                    (v128.store (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))
                      (f32x4.sub (f32x4.mul (local.get $lo) (local.get $c)) (f32x4.mul (local.get $hi) (local.get $s))))
                    (v128.store (i32.add (i32.add (local.get $head) (local.get $hb)) (i32.shl (local.get $i) (i32.const 2)))
                      (f32x4.add (f32x4.mul (local.get $lo) (local.get $s)) (f32x4.mul (local.get $hi) (local.get $c))))
                    (local.set $i (i32.add (local.get $i) (i32.const 4)))
                    (br $nv)))
                (block $ntDone
                  (loop $nt
                    (br_if $ntDone (i32.ge_u (local.get $i) (local.get $half)))
                    (local.set $xl (f32.load (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $xh (f32.load (i32.add (i32.add (local.get $head) (local.get $hb)) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $cs (f32.load (i32.add (local.get $cos) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $ss (f32.load (i32.add (local.get $sin) (i32.shl (local.get $i) (i32.const 2)))))
                    (f32.store (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))
                      (f32.sub (f32.mul (local.get $xl) (local.get $cs)) (f32.mul (local.get $xh) (local.get $ss))))
                    (f32.store (i32.add (i32.add (local.get $head) (local.get $hb)) (i32.shl (local.get $i) (i32.const 2)))
                      (f32.add (f32.mul (local.get $xl) (local.get $ss)) (f32.mul (local.get $xh) (local.get $cs))))
                    (local.set $i (i32.add (local.get $i) (i32.const 1)))
                    (br $nt))))
              (else
                (block $vDone
                  (loop $v
                    (br_if $vDone (i32.ge_u (local.get $i) (local.get $dim4)))
                    (local.set $lo (v128.load (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))))
                    (v128.store (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))
                      (f32x4.add
                        (f32x4.mul (local.get $lo) (v128.load (i32.add (local.get $cos) (i32.shl (local.get $i) (i32.const 2)))))
                        (f32x4.mul (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $lo) (local.get $lo))
                          (v128.load (i32.add (local.get $sin) (i32.shl (local.get $i) (i32.const 2)))))))
                    (local.set $i (i32.add (local.get $i) (i32.const 4)))
                    (br $v)))
                (block $tDone
                  (loop $tl
                    (br_if $tDone (i32.ge_u (local.get $i) (local.get $headDim)))
                    (local.set $xl (f32.load (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $xh (f32.load offset=4 (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $cs (f32.load (i32.add (local.get $cos) (i32.shl (local.get $i) (i32.const 2)))))
                    (local.set $ss (f32.load offset=4 (i32.add (local.get $sin) (i32.shl (local.get $i) (i32.const 2)))))
                    (f32.store (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))
                      (f32.sub (f32.mul (local.get $xl) (local.get $cs)) (f32.mul (local.get $xh) (local.get $ss))))
                    (f32.store offset=4 (i32.add (local.get $head) (i32.shl (local.get $i) (i32.const 2)))
                      (f32.add (f32.mul (local.get $xl) (local.get $ss)) (f32.mul (local.get $xh) (local.get $cs))))
                    (local.set $i (i32.add (local.get $i) (i32.const 2)))
                    (br $tl)))))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $headsLoop)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $rows))))

  ;; attention: causal grouped-query attention of $count query rows at positions pos0.. over the cache
  ;; rows 0..pos0+t (see src/submit/ops/attention.ts). Per (row, head): scores = q . k_j * scale into
  ;; $scratch (pos0 + count floats), softmax weights in place, out = sum_j w_j v_j. The loops over the
  ;; head's elements are inline (head dims are small: a call per position would cost more than its
  ;; arithmetic).
  (func (export "attention") (param $q i32) (param $k i32) (param $v i32) (param $out i32) (param $count i32)
    (param $heads i32) (param $kvHeads i32) (param $headDim i32) (param $pos0 i32) (param $scale f32) (param $scratch i32)
    (local $t i32) (local $h i32) (local $j i32) (local $last i32) (local $group i32) (local $qAt i32) (local $kvOff i32)
    (local $kvRow i32) (local $n i32) (local $inv f32) (local $oAt i32) (local $max f32) (local $d i32)
    (local $dim4 i32) (local $dim8 i32) (local $row i32) (local $acc v128) (local $acc1 v128) (local $s f32) (local $wv v128) (local $at i32)
    (local $quads i32) (local $qv v128) (local $acc2 v128) (local $acc3 v128) (local $scaleV v128) (local $dim16 i32)
    (local.set $group (i32.div_u (local.get $heads) (local.get $kvHeads)))
    (local.set $kvRow (i32.shl (i32.mul (local.get $kvHeads) (local.get $headDim)) (i32.const 2)))
    (local.set $dim4 (i32.shl (i32.and (local.get $headDim) (i32.const -4)) (i32.const 2)))
    (local.set $dim8 (i32.shl (i32.and (local.get $headDim) (i32.const -8)) (i32.const 2)))
    (local.set $dim16 (i32.shl (i32.and (local.get $headDim) (i32.const -16)) (i32.const 2)))
    (local.set $scaleV (f32x4.splat (local.get $scale)))
    (block $rowsDone
      (loop $rows
        (br_if $rowsDone (i32.ge_u (local.get $t) (local.get $count)))
        (local.set $last (i32.add (local.get $pos0) (local.get $t)))
        (local.set $n (i32.add (local.get $last) (i32.const 1)))
        (local.set $h (i32.const 0))
        (block $headsDone
          (loop $headsLoop
            (br_if $headsDone (i32.ge_u (local.get $h) (local.get $heads)))
            (local.set $qAt (i32.add (local.get $q)
              (i32.shl (i32.add (i32.mul (i32.mul (local.get $t) (local.get $heads)) (local.get $headDim)) (i32.mul (local.get $h) (local.get $headDim))) (i32.const 2))))
            (local.set $oAt (i32.add (local.get $out) (i32.sub (local.get $qAt) (local.get $q))))
            (local.set $kvOff (i32.shl (i32.mul (i32.div_u (local.get $h) (local.get $group)) (local.get $headDim)) (i32.const 2)))
            ;; scores[j] = (q . k_j) * scale: four lanes summed by $hsum, then the rest in order.
            (local.set $j (i32.const 0))
            (local.set $row (i32.add (local.get $k) (local.get $kvOff)))
            ;; Four positions at a time when the head has no K mod 4 tail: each load of q feeds four keys
            ;; (four independent add chains), and the four $hsum come out of one transposed reduction with
            ;; the same additions in the same order, so every score has the bits of the loop below.
            (if (i32.eq (local.get $dim4) (i32.shl (local.get $headDim) (i32.const 2)))
              (then
                (local.set $quads (i32.and (local.get $n) (i32.const -4)))
                (block $quadsDone
                  (loop $quadLoop
                    (br_if $quadsDone (i32.ge_u (local.get $j) (local.get $quads)))
                    (local.set $acc (v128.const i32x4 0 0 0 0))
                    (local.set $acc1 (v128.const i32x4 0 0 0 0))
                    (local.set $acc2 (v128.const i32x4 0 0 0 0))
                    (local.set $acc3 (v128.const i32x4 0 0 0 0))
                    (local.set $at (local.get $row))
                    (local.set $d (i32.const 0))
                    (block $qk4Done
                      (loop $qk4
                        (br_if $qk4Done (i32.ge_u (local.get $d) (local.get $dim4)))
                        (local.set $qv (v128.load (i32.add (local.get $qAt) (local.get $d))))
                        (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $qv) (v128.load (local.get $at)))))
                        (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $qv) (v128.load (i32.add (local.get $at) (local.get $kvRow))))))
                        (local.set $acc2 (f32x4.add (local.get $acc2)
                          (f32x4.mul (local.get $qv) (v128.load (i32.add (local.get $at) (i32.shl (local.get $kvRow) (i32.const 1)))))))
                        (local.set $acc3 (f32x4.add (local.get $acc3)
                          (f32x4.mul (local.get $qv) (v128.load (i32.add (local.get $at) (i32.mul (local.get $kvRow) (i32.const 3)))))))
                        (local.set $at (i32.add (local.get $at) (i32.const 16)))
                        (local.set $d (i32.add (local.get $d) (i32.const 16)))
                        (br $qk4)))
                    (local.set $acc (f32x4.add
                      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $acc) (local.get $acc1))
                      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $acc) (local.get $acc1))))
                    (local.set $acc2 (f32x4.add
                      (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $acc2) (local.get $acc3))
                      (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $acc2) (local.get $acc3))))
                    (v128.store (i32.add (local.get $scratch) (i32.shl (local.get $j) (i32.const 2)))
                      (f32x4.mul (local.get $scaleV) (f32x4.add
                        (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (local.get $acc) (local.get $acc2))
                        (i8x16.shuffle 4 5 6 7 12 13 14 15 20 21 22 23 28 29 30 31 (local.get $acc) (local.get $acc2)))))
                    (local.set $row (i32.add (local.get $row) (i32.shl (local.get $kvRow) (i32.const 2))))
                    (local.set $j (i32.add (local.get $j) (i32.const 4)))
                    (br $quadLoop)))))
            (block $scoresDone
              (loop $scores
                (br_if $scoresDone (i32.gt_u (local.get $j) (local.get $last)))
                (local.set $acc (v128.const i32x4 0 0 0 0))
                (local.set $d (i32.const 0))
                (block $qkDone
                  (loop $qk
                    (br_if $qkDone (i32.ge_u (local.get $d) (local.get $dim4)))
                    (local.set $acc (f32x4.add (local.get $acc)
                      (f32x4.mul (v128.load (i32.add (local.get $qAt) (local.get $d))) (v128.load (i32.add (local.get $row) (local.get $d))))))
                    (local.set $d (i32.add (local.get $d) (i32.const 16)))
                    (br $qk)))
                (local.set $s (call $hsum (local.get $acc)))
                (block $qkTailDone
                  (loop $qkTail
                    (br_if $qkTailDone (i32.ge_u (local.get $d) (i32.shl (local.get $headDim) (i32.const 2))))
                    (local.set $s (f32.add (local.get $s)
                      (f32.mul (f32.load (i32.add (local.get $qAt) (local.get $d))) (f32.load (i32.add (local.get $row) (local.get $d))))))
                    (local.set $d (i32.add (local.get $d) (i32.const 4)))
                    (br $qkTail)))
                (f32.store (i32.add (local.get $scratch) (i32.shl (local.get $j) (i32.const 2))) (f32.mul (local.get $s) (local.get $scale)))
                (local.set $row (i32.add (local.get $row) (local.get $kvRow)))
                (local.set $j (i32.add (local.get $j) (i32.const 1)))
                (br $scores)))
            (local.set $max (call $max (local.get $scratch) (local.get $n)))
            (local.set $inv (f32.div (f32.const 1) (call $exp_shift (local.get $scratch) (local.get $scratch) (local.get $n) (local.get $max))))
            ;; out = sum_j (e_j / sum) v_j: eight elements of the head at a time in two registers while j runs,
            ;; then the headDim mod 8 rest one element at a time.
            (local.set $d (i32.const 0))
            ;; Sixteen elements per pass (four registers) while the head has them: each splat of a weight
            ;; feeds four vectors; every element still sums over j in order.
            (block $wideDone
              (loop $wide
                (br_if $wideDone (i32.ge_u (local.get $d) (local.get $dim16)))
                (local.set $acc (v128.const i32x4 0 0 0 0))
                (local.set $acc1 (v128.const i32x4 0 0 0 0))
                (local.set $acc2 (v128.const i32x4 0 0 0 0))
                (local.set $acc3 (v128.const i32x4 0 0 0 0))
                (local.set $row (i32.add (i32.add (local.get $v) (local.get $kvOff)) (local.get $d)))
                (local.set $at (local.get $scratch))
                (local.set $j (i32.const 0))
                (block $pv4Done
                  (loop $pv4
                    (br_if $pv4Done (i32.gt_u (local.get $j) (local.get $last)))
                    (local.set $wv (v128.load32_splat (local.get $at)))
                    (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $wv) (v128.load (local.get $row)))))
                    (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $wv) (v128.load offset=16 (local.get $row)))))
                    (local.set $acc2 (f32x4.add (local.get $acc2) (f32x4.mul (local.get $wv) (v128.load offset=32 (local.get $row)))))
                    (local.set $acc3 (f32x4.add (local.get $acc3) (f32x4.mul (local.get $wv) (v128.load offset=48 (local.get $row)))))
                    (local.set $row (i32.add (local.get $row) (local.get $kvRow)))
                    (local.set $at (i32.add (local.get $at) (i32.const 4)))
                    (local.set $j (i32.add (local.get $j) (i32.const 1)))
                    (br $pv4)))
                (v128.store (i32.add (local.get $oAt) (local.get $d)) (local.get $acc))
                (v128.store offset=16 (i32.add (local.get $oAt) (local.get $d)) (local.get $acc1))
                (v128.store offset=32 (i32.add (local.get $oAt) (local.get $d)) (local.get $acc2))
                (v128.store offset=48 (i32.add (local.get $oAt) (local.get $d)) (local.get $acc3))
                (local.set $d (i32.add (local.get $d) (i32.const 64)))
                (br $wide)))
            (block $chunksDone
              (loop $chunks
                (br_if $chunksDone (i32.ge_u (local.get $d) (local.get $dim8)))
                (local.set $acc (v128.const i32x4 0 0 0 0))
                (local.set $acc1 (v128.const i32x4 0 0 0 0))
                (local.set $row (i32.add (i32.add (local.get $v) (local.get $kvOff)) (local.get $d)))
                (local.set $at (local.get $scratch))
                (local.set $j (i32.const 0))
                (block $pvDone
                  (loop $pv
                    (br_if $pvDone (i32.gt_u (local.get $j) (local.get $last)))
                    (local.set $wv (v128.load32_splat (local.get $at)))
                    (local.set $acc (f32x4.add (local.get $acc) (f32x4.mul (local.get $wv) (v128.load (local.get $row)))))
                    (local.set $acc1 (f32x4.add (local.get $acc1) (f32x4.mul (local.get $wv) (v128.load offset=16 (local.get $row)))))
                    (local.set $row (i32.add (local.get $row) (local.get $kvRow)))
                    (local.set $at (i32.add (local.get $at) (i32.const 4)))
                    (local.set $j (i32.add (local.get $j) (i32.const 1)))
                    (br $pv)))
                (v128.store (i32.add (local.get $oAt) (local.get $d)) (local.get $acc))
                (v128.store offset=16 (i32.add (local.get $oAt) (local.get $d)) (local.get $acc1))
                (local.set $d (i32.add (local.get $d) (i32.const 32)))
                (br $chunks)))
            (block $restDone
              (loop $rest
                (br_if $restDone (i32.ge_u (local.get $d) (i32.shl (local.get $headDim) (i32.const 2))))
                (local.set $s (f32.const 0))
                (local.set $row (i32.add (i32.add (local.get $v) (local.get $kvOff)) (local.get $d)))
                (local.set $j (i32.const 0))
                (block $pvTailDone
                  (loop $pvTail
                    (br_if $pvTailDone (i32.gt_u (local.get $j) (local.get $last)))
                    (local.set $s (f32.add (local.get $s)
                      (f32.mul (f32.load (i32.add (local.get $scratch) (i32.shl (local.get $j) (i32.const 2)))) (f32.load (local.get $row)))))
                    (local.set $row (i32.add (local.get $row) (local.get $kvRow)))
                    (local.set $j (i32.add (local.get $j) (i32.const 1)))
                    (br $pvTail)))
                (f32.store (i32.add (local.get $oAt) (local.get $d)) (local.get $s))
                (local.set $d (i32.add (local.get $d) (i32.const 4)))
                (br $rest)))
            (call $scale_in_place (local.get $oAt) (local.get $headDim) (local.get $inv))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $headsLoop)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $rows))))
)

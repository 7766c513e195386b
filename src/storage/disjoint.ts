// The central disjointness proof for AllocationGroup.splitMut (G2). This module is the only place that
// decides whether several mutable views may exist at once.
//
// Input: already-resolved descriptor records (validated layouts and claims, retained). The proof never
// revalidates a layout and never enumerates elements. Steps, in order:
//   1. write injectivity per record (the retained proof, or computed once and retained);
//   2. empty layouts reach no byte and are disjoint from everything (even a repeated empty slot);
//   3. each remaining byte envelope is widened to the provider's write granularity (a WebGPU host write
//      rewrites whole 4-byte words, so two writers inside one word would lose each other's bytes) and
//      the widened envelopes are compared per root (different roots never overlap);
//   4. a pair whose envelopes intersect is a definite `overlap` when it surely shares a byte: the same
//      record twice, two contiguous layouts, or one layout's surely-reached element (first, lowest or
//      highest) inside the other's contiguous range or on the other's surely-reached element;
//      a pair that only shares a write unit is `shared-write-unit`; anything else is
//      `NotProvablyDisjoint` (conservative: interleaved strides are never enumerated).
// Read requests (dispatch bindings that only read) may alias each other; every pair with a write must be
// disjoint. The verdict depends only on the set of requests, not their order: the most definite reason
// found over all pairs wins. Pure apart from counter ticks.
import { TenonError } from '../errors.js';
import { alignDown, alignUp } from './arith.js';
import { dtypeSize } from './dtype.js';
import { ensureInjective } from './tensor.js';
import type { Target } from './tensor.js';

export interface SplitRequest {
  /** Position in the caller's list, for diagnostics. */
  readonly index: number;
  readonly slot: number;
  readonly record: Target;
  /** Whether this request writes. Reads may alias each other; a write must be disjoint from every other request. */
  readonly write: boolean;
}

interface Span {
  readonly request: SplitRequest;
  readonly rootId: number;
  /** Root-relative envelope of the layout. */
  readonly start: number;
  readonly end: number;
  /** The envelope widened to whole write units. */
  readonly unitStart: number;
  readonly unitEnd: number;
  /** Root-relative byte ranges of elements the layout surely reaches. */
  readonly anchors: readonly (readonly [number, number])[];
  readonly contiguous: boolean;
}

type Verdict = 'overlap' | 'shared-write-unit' | 'NotProvablyDisjoint';
const RANK: Readonly<Record<Verdict, number>> = { overlap: 3, 'shared-write-unit': 1, NotProvablyDisjoint: 2 };

const intersects = (a0: number, a1: number, b0: number, b1: number): boolean => a0 < b1 && b0 < a1;

function classify(a: Span, b: Span): Verdict {
  if (!intersects(a.start, a.end, b.start, b.end)) return 'shared-write-unit';
  if (a.request.record === b.request.record || (a.contiguous && b.contiguous)) return 'overlap';
  const hits = (x: Span, y: Span): boolean =>
    x.anchors.some(([s, e]) => (y.contiguous && intersects(s, e, y.start, y.end)) || y.anchors.some(([t, f]) => intersects(s, e, t, f)));
  return hits(a, b) || hits(b, a) ? 'overlap' : 'NotProvablyDisjoint';
}

function spanOf(request: SplitRequest): Span {
  const { claim, layout } = request.record;
  const unit = claim.root.provider.capabilities.writeGranularity;
  const item = dtypeSize(layout.dtype);
  const start = claim.start + layout.envelope.start;
  const end = claim.start + layout.envelope.end;
  const first = claim.start + layout.byteOffset;
  return {
    request,
    rootId: claim.root.id,
    start,
    end,
    unitStart: alignDown(start, unit),
    unitEnd: alignUp(end, unit),
    anchors: [
      [start, start + item],
      [end - item, end],
      [first, first + item],
    ],
    contiguous: layout.kind === 'contiguous',
  };
}

export function proveDisjoint(requests: readonly SplitRequest[], op: string): void {
  if (requests.length === 0) return;
  requests[0]!.record.claim.root.provider.meter.bump('disjointnessProofs');
  for (const request of requests) if (request.write) ensureInjective(request.record, op);

  const spans = requests.filter((r) => r.record.layout.size > 0).map(spanOf);
  spans.sort((a, b) => a.rootId - b.rootId || a.unitStart - b.unitStart || a.unitEnd - b.unitEnd || a.request.slot - b.request.slot);

  let worst: { verdict: Verdict; a: Span; b: Span } | undefined;
  for (let i = 0; i < spans.length; i++) {
    const a = spans[i]!;
    for (let j = i + 1; j < spans.length; j++) {
      const b = spans[j]!;
      if (b.rootId !== a.rootId || b.unitStart >= a.unitEnd) break;
      if (!a.request.write && !b.request.write) continue;
      const verdict = classify(a, b);
      if (worst === undefined || RANK[verdict] > RANK[worst.verdict]) worst = { verdict, a, b };
    }
  }
  if (worst === undefined) return;
  const { verdict, a, b } = worst;
  const [first, second] = a.request.index <= b.request.index ? [a, b] : [b, a];
  const ids = { slotA: first.request.slot, slotB: second.request.slot, root: a.rootId };
  const range = { start: Math.max(a.unitStart, b.unitStart), end: Math.min(a.unitEnd, b.unitEnd) };
  const message =
    verdict === 'overlap'
      ? 'requested mutable views overlap'
      : verdict === 'shared-write-unit'
        ? 'requested mutable views share a device write unit'
        : 'requested mutable views cannot be proven disjoint';
  throw new TenonError('EINVAL', message, { op, reason: verdict, ids, range });
}

// The central disjointness proof for AllocationGroup.splitMut (G2). This module is the only place that
// decides whether several mutable views may exist at once.
//
// Input: already-resolved descriptor records (validated layouts and claims, retained). The proof never
// revalidates a layout and never enumerates elements. Steps, in order:
//   1. write injectivity per record (the retained proof, or computed once and retained);
//   2. empty layouts reach no byte and are disjoint from everything;
//   3. the remaining byte envelopes are compared per root (different roots never overlap);
//   4. intersecting envelopes are a definite `overlap` when both layouts are contiguous (or the same
//      record is requested twice); otherwise the pair is `NotProvablyDisjoint` (conservative).
// The verdict depends only on the set of requests, not their order. Pure apart from counter ticks.
import { TenonError } from '../errors.js';
import { ensureInjective } from './tensor.js';
import type { Target } from './tensor.js';

export interface SplitRequest {
  /** Position in the caller's list, for diagnostics. */
  readonly index: number;
  readonly slot: number;
  readonly record: Target;
}

interface Span {
  readonly request: SplitRequest;
  readonly rootId: number;
  readonly start: number;
  readonly end: number;
}

export function proveDisjoint(requests: readonly SplitRequest[], op: string): void {
  if (requests.length === 0) return;
  requests[0]!.record.claim.root.provider.meter.bump('disjointnessProofs');
  for (const request of requests) ensureInjective(request.record, op);

  const spans: Span[] = [];
  for (const request of requests) {
    const { claim, layout } = request.record;
    if (layout.size === 0) continue;
    spans.push({
      request,
      rootId: claim.root.id,
      start: claim.start + layout.envelope.start,
      end: claim.start + layout.envelope.end,
    });
  }
  spans.sort((a, b) => a.rootId - b.rootId || a.start - b.start || a.end - b.end);

  let definite: [Span, Span] | undefined;
  let unproven: [Span, Span] | undefined;
  for (let i = 0; i < spans.length; i++) {
    const a = spans[i]!;
    for (let j = i + 1; j < spans.length; j++) {
      const b = spans[j]!;
      if (b.rootId !== a.rootId || b.start >= a.end) break;
      const sameRecord = a.request.record === b.request.record;
      const bothContiguous = a.request.record.layout.kind === 'contiguous' && b.request.record.layout.kind === 'contiguous';
      if (sameRecord || bothContiguous) definite ??= [a, b];
      else unproven ??= [a, b];
    }
  }
  const failing = definite ?? unproven;
  if (failing === undefined) return;
  const [a, b] = failing;
  const ids = { slotA: a.request.slot, slotB: b.request.slot, root: a.rootId };
  const range = { start: Math.max(a.start, b.start), end: Math.min(a.end, b.end) };
  if (definite !== undefined) {
    throw new TenonError('EINVAL', 'requested mutable views overlap', { op, reason: 'overlap', ids, range });
  }
  throw new TenonError('EINVAL', 'requested mutable views cannot be proven disjoint', { op, reason: 'NotProvablyDisjoint', ids, range });
}

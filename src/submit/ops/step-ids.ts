// step_ids: the token ids of one chained step (shaders/step_ids.wgsl). A chained submission cannot have
// the host write its ids buffer (the state group is in flight), so each step takes its ids on the device:
// a chunk of a prompt staged once before the chain began (`source: { kind: 'staged', at }`: ids[i] =
// staged[at + i]), or one token the host passes in the step's uniform (`source: { kind: 'host', token }`,
// count 1). `at` and `token` are per-step values, so one recorded graph serves every chunk and every
// token. Used by the session's chained steps (src/session/llama.ts).
import shader from '../../../shaders/step_ids.wgsl?raw';
import { LINEAR_WORKGROUP, U32, checkIndex, checkOperands, checkShape, checkSize, linearDispatch, packParams, rejectParam, rejectRange } from './common.js';
import type { OpBinding, OpDef } from './types.js';

export type StepIdsSource = { readonly kind: 'staged'; readonly at: number } | { readonly kind: 'host'; readonly token: number };

export interface StepIdsParams {
  /** Ids to write (the step's token count). */
  readonly count: number;
  /** Elements of the staged buffer. */
  readonly staged: number;
  readonly source: StepIdsSource;
}

const BINDINGS: readonly OpBinding[] = [
  { name: 'staged', access: 'read', dtypes: U32 },
  { name: 'ids', access: 'read_write', dtypes: U32 },
];

export const stepIds: OpDef<StepIdsParams, readonly [staged: Uint32Array, ids: Uint32Array]> = {
  name: 'step_ids',
  shader,
  entryPoint: 'main',
  bindings: BINDINGS,
  paramsBytes: 32,
  check(operands, p) {
    checkOperands('step_ids', BINDINGS, operands);
    checkSize('step_ids', 'count', p.count);
    checkSize('step_ids', 'staged', p.staged);
    checkShape('step_ids', 'staged', operands[0]!, [p.staged]);
    checkShape('step_ids', 'ids', operands[1]!, [p.count]);
    const source = p.source;
    if (source?.kind === 'host') {
      if (p.count !== 1) rejectParam('step_ids', 'count', 'a token from the host fills exactly one id');
      checkIndex('step_ids', 'token', source.token);
    } else if (source?.kind === 'staged') {
      checkIndex('step_ids', 'at', source.at);
      if (source.at + p.count > p.staged) rejectRange('step_ids', `ids ${source.at}..${source.at + p.count - 1} are outside the ${p.staged} staged`, { at: source.at, count: p.count });
    } else {
      rejectParam('step_ids', 'source', 'source must be staged or host');
    }
  },
  params(p, offsets) {
    const s = p.source;
    const [at, fromHost, token] = s.kind === 'host' ? [0, 1, s.token] : [s.at, 0, 0];
    return packParams(32, [{ u32: offsets[0]! }, { u32: offsets[1]! }, { u32: p.count }, { u32: at }, { u32: fromHost }, { u32: token }]);
  },
  constants() {
    return { WG: LINEAR_WORKGROUP };
  },
  workgroups(p, limits) {
    return linearDispatch('step_ids', p.count, LINEAR_WORKGROUP, limits);
  },
  host(p, [staged, ids]) {
    const source = p.source;
    if (source.kind === 'host') ids[0] = source.token;
    else ids.set(staged.subarray(source.at, source.at + p.count), 0);
  },
};

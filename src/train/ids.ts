// Value identity inside one process: container id + local key. A lookup key for gradient maps, never an
// authority (it reaches no storage by itself). Pure, stateless.
import { TenonError } from '../errors.js';
import { ValueHandle } from './retention.js';

/** The identity of the value `handle` refers to (equal for every clone of it). */
export function valueId(handle: ValueHandle, op: string): string {
  if (!(handle instanceof ValueHandle)) throw new TenonError('EINVAL', 'expected a ValueHandle', { op, reason: 'not-a-handle' });
  const r = handle.record(op);
  return `${r.container.id}:${r.key}`;
}

// Value identity inside one process: container id + local key. A lookup key for gradient maps, never an
// authority (it reaches no storage by itself). Pure, stateless.
import { recordOf } from './retention.js';
import type { ValueHandle } from './retention.js';

/** The identity of the value `handle` refers to (equal for every clone of it). */
export function valueId(handle: ValueHandle, op: string): string {
  const r = recordOf(handle, op);
  return `${r.container.id}:${r.key}`;
}

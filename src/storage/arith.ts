// Exact integer arithmetic for layout checks. Every result stays inside Number.MAX_SAFE_INTEGER or the
// call throws EOVERFLOW, so no bound is ever computed on a rounded double. Pure functions.
import { TenonError } from '../errors.js';

function overflow(op: string, what: string): never {
  throw new TenonError('EOVERFLOW', `${what} leaves the exact integer range`, { op, reason: 'overflow' });
}

export function checkedMul(a: number, b: number, op: string, what: string): number {
  const r = a * b;
  if (!Number.isSafeInteger(r)) overflow(op, what);
  return r;
}

export function checkedAdd(a: number, b: number, op: string, what: string): number {
  const r = a + b;
  if (!Number.isSafeInteger(r)) overflow(op, what);
  return r;
}

export function alignUp(value: number, alignment: number): number {
  return Math.ceil(value / alignment) * alignment;
}

export function alignDown(value: number, alignment: number): number {
  return Math.floor(value / alignment) * alignment;
}

// Assertions on TenonError codes (tests assert codes and stable reasons, never message text).
import { expect } from 'vitest';
import { TenonError } from '../../src/index.js';
import type { TenonErrorCode } from '../../src/index.js';

/** Runs `fn` and returns the TenonError it throws, failing the test if it throws anything else. */
export function catchTenon(fn: () => unknown): TenonError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TenonError);
    return err as TenonError;
  }
  throw new Error('expected a TenonError, nothing was thrown');
}

export async function catchTenonAsync(fn: () => Promise<unknown>): Promise<TenonError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TenonError);
    return err as TenonError;
  }
  throw new Error('expected a TenonError, nothing was thrown');
}

export function expectCode(fn: () => unknown, code: TenonErrorCode, reason?: string): TenonError {
  const err = catchTenon(fn);
  expect(err.code).toBe(code);
  if (reason !== undefined) expect(err.reason).toBe(reason);
  return err;
}

export async function expectCodeAsync(fn: () => Promise<unknown>, code: TenonErrorCode, reason?: string): Promise<TenonError> {
  const err = await catchTenonAsync(fn);
  expect(err.code).toBe(code);
  if (reason !== undefined) expect(err.reason).toBe(reason);
  return err;
}

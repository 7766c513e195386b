// Paced event pumping for Dawn in Node (the `webgpu` package), used by the `tenon` CLI (tenon.ts) on a
// software adapter only. Main thread; the caller owns the returned restore function and calls it once.
//
// Dawn settles its promises (mapAsync, onSubmittedWorkDone, popErrorScope) by calling the instance's
// ProcessEvents from a callback it schedules through the global `setImmediate`, re-armed after every pump
// while any of them is pending: an await on the GPU turns the main thread into a busy loop of immediates.
// On a software adapter (SwiftShader, llvmpipe) the "GPU" is a pool of threads on the same CPU cores, so
// that loop takes a core from the very work it waits for. Measured on the shared 2-core machine (load
// about 3.5, eight interleaved runs each, stories260K.bin, 200 greedy steps): median 151 tokens/s paced,
// 72 with the spinning pump, which swung between 40 and 248; on a nearly idle machine the spinning pump's
// best runs were faster (up to ~275 against ~225) but it still ranged from ~130 to ~275. `paceDawnEvents`
// routes the global `setImmediate` through a zero-delay timer (Node runs those at most once per
// millisecond) until restored: each pump then yields the core for up to PUMP_INTERVAL_MS. A pipelined
// decode keeps several steps queued on the device, so the later wake-up delays the host, not the device.
// On a hardware adapter the CPU is free for the pump and a millisecond would be a large part of a token:
// the CLI leaves the pump as Dawn made it there.
// Any other caller of the global setImmediate in this process is paced the same way while installed (the
// CLI's own code has none; Node's internals use their own timers); clearImmediate cancels either kind.

/** Delay given to a paced immediate (Node clamps timers to at least one millisecond). */
const PUMP_INTERVAL_MS = 0;

type ImmediateFn = typeof globalThis.setImmediate;
type ClearImmediateFn = typeof globalThis.clearImmediate;

/** Installs the paced pump; returns the function that puts the original setImmediate and clearImmediate back. */
export function paceDawnEvents(): () => void {
  const original = globalThis.setImmediate;
  const originalClear = globalThis.clearImmediate;
  const paced = ((callback: (...args: unknown[]) => void, ...args: unknown[]) => setTimeout(callback, PUMP_INTERVAL_MS, ...args)) as unknown as ImmediateFn;
  const clear = ((handle: unknown) => {
    if (handle instanceof Object && 'refresh' in handle) clearTimeout(handle as NodeJS.Timeout);
    else originalClear(handle as NodeJS.Immediate);
  }) as ClearImmediateFn;
  globalThis.setImmediate = paced;
  globalThis.clearImmediate = clear;
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    if (globalThis.setImmediate === paced) globalThis.setImmediate = original;
    if (globalThis.clearImmediate === clear) globalThis.clearImmediate = originalClear;
  };
}

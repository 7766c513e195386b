// Context-local leak diagnostics. A FinalizationRegistry notices descriptors that were dropped while
// still open; it counts them here and aborts them (D4, C5), but it is never the release path: close,
// abort and session teardown are (STYLE.md 4).
let leaked = 0;

export function recordLeak(): void {
  leaked++;
}

export function leakedCount(): number {
  return leaked;
}

// Runs before the e2e lane: the lane tests what ships, so it builds it first (scripts/build.sh: bundles,
// workers, declarations, Node builds, demo). `npm test` builds in a step of its own and sets TENON_BUILT=1.
import { execFileSync } from 'node:child_process';

export default function globalSetup(): void {
  if (process.env['TENON_BUILT'] === '1') return;
  execFileSync('bash', ['scripts/build.sh'], { stdio: 'inherit' });
}

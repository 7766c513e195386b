// The graphics stack Dawn loads (its Vulkan loader and window-system probes) complains on stderr
// ("XDG_RUNTIME_DIR is invalid or not set") when XDG_RUNTIME_DIR does not name a directory. A desktop
// session sets it; a container, a CI job or `sudo` often does not. Before the CLI loads Dawn it gives the
// variable a private default: a directory under os.tmpdir() owned by this user with mode 0700, as the XDG
// base directory specification asks of that directory. A valid value set by the user is kept. Node's
// process.env writes through to the C environment, so the native module sees the value. Main thread only.
import { lstatSync, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Owner-only permissions: the mode the XDG specification requires of the runtime directory. */
const PRIVATE_MODE = 0o700;
/** Permission bits that must be clear for a directory to count as private (group and others). */
const SHARED_BITS = 0o077;

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A real directory (not a link) owned by this user that nobody else can enter. */
function isPrivateDirectory(path: string): boolean {
  try {
    const s = lstatSync(path);
    const uid = process.getuid?.();
    return s.isDirectory() && (uid === undefined || s.uid === uid) && (s.mode & SHARED_BITS) === 0;
  } catch {
    return false;
  }
}

/**
 * Sets XDG_RUNTIME_DIR in `env` to a private directory when it is unset, empty or not a directory;
 * returns the value now in effect. The default is `<base>/tenon-runtime-<uid>` (base: os.tmpdir()); if
 * that name is taken by anything but this user's private directory, a fresh private directory (mkdtemp,
 * mode 0700) under `base` is used instead.
 */
export function ensureRuntimeDir(env: NodeJS.ProcessEnv = process.env, base: string = tmpdir()): string {
  const current = env['XDG_RUNTIME_DIR'];
  if (current !== undefined && current !== '' && isDirectory(current)) return current;
  const stable = join(base, `tenon-runtime-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(stable, { mode: PRIVATE_MODE });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const dir = isPrivateDirectory(stable) ? stable : mkdtempSync(join(base, 'tenon-runtime-'));
  env['XDG_RUNTIME_DIR'] = dir;
  return dir;
}

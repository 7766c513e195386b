#!/usr/bin/env bash
# Installs what tenon's lanes need from the system, only when missing (idempotent, quiet when present):
#   - Node.js >= 20.19 must already be there (Vite 8 needs it; we never install Node);
#   - Debian `chromium` (the browser lanes; its SwiftShader Vulkan driver also serves Dawn in Node);
#   - `libvulkan1` (the Vulkan loader Dawn uses in Node).
# Needs root (or sudo) only when something is missing. See TOOLCHAIN.md for why these packages.
set -euo pipefail

node_ok=$(node -e 'const [a,b]=process.versions.node.split(".").map(Number); console.log(a>20||(a===20&&b>=19)?1:0)' 2>/dev/null || echo 0)
if [ "$node_ok" != 1 ]; then
  echo "tenon setup: Node.js >= 20.19 is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

missing=()
chromium_bin=${CHROMIUM_PATH:-/usr/bin/chromium}
[ -x "$chromium_bin" ] && [ -f /usr/lib/chromium/vk_swiftshader_icd.json ] || missing+=(chromium)
{ ldconfig -p 2>/dev/null | grep -q 'libvulkan\.so\.1'; } || missing+=(libvulkan1)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tenon setup: installing ${missing[*]} (Debian packages)"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "tenon setup: need root to install ${missing[*]}; run: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
echo "tenon setup: installed ${missing[*]}"

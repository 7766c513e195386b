# Environment every lane runs with (sourced, not executed). TOOLCHAIN.md: Dawn in Node uses Chromium's
# SwiftShader Vulkan driver, and must see these in the real process environment (not vitest's test.env).
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/lib/chromium/vk_swiftshader_icd.json}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
export CHROMIUM_PATH=${CHROMIUM_PATH:-/usr/bin/chromium}

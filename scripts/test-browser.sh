#!/usr/bin/env bash
# Browser tests of the explainer UI (tests/browser/explainer.test.mjs): installs playwright-core into
# the git-ignored tests/browser/.npm when missing (npm's default registry), then drives Debian's
# chromium against a real `nucleus serve` on stories260K, with the speed panels on the speed model
# (scripts/speed-model.sh, written next to the binary on first use: about a second). Fails loudly —
# never skips — when chromium, node or playwright-core cannot be set up. Expects build/nucleus
# (scripts/test.sh builds it first). Screenshots: build/browser-artifacts/*.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
playwright_version="1.65.1"
modules="tests/browser/.npm"

command -v node >/dev/null || { echo "test-browser: node is missing (scripts/install-deps.sh installs nodejs)" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "test-browser: /usr/bin/chromium is missing (scripts/install-deps.sh installs chromium)" >&2; exit 1; }
installed="$(node -p "require('./$modules/node_modules/playwright-core/package.json').version" 2>/dev/null || true)"
if [ "$installed" != "$playwright_version" ]; then
  command -v npm >/dev/null || { echo "test-browser: npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
  npm install --prefix "$modules" --no-audit --no-fund --no-save "playwright-core@$playwright_version"
fi
binary="${NUCLEUS_BINARY:-$root/build/nucleus}"
speed_model="${NUCLEUS_SPEED_MODEL:-$(dirname "$binary")/speed-model.gguf}"
[ -x "$binary" ] || { echo "test-browser: $binary is missing (build first)" >&2; exit 1; }
bash scripts/speed-model.sh "$binary" "$speed_model"
NUCLEUS_BINARY="$binary" \
NUCLEUS_SPEED_MODEL="$speed_model" \
NUCLEUS_SHARED_DIR="${NUCLEUS_SHARED_DIR:-$root/../shared}" \
NUCLEUS_ARTIFACTS="${NUCLEUS_ARTIFACTS:-$root/build/browser-artifacts}" \
  timeout 600 node tests/browser/explainer.test.mjs

#!/usr/bin/env bash
# Quick start, step 2: the whole test suite. Builds and runs the GoogleTest suite twice:
# an optimized build, and an AddressSanitizer + UndefinedBehaviorSanitizer build; between them the
# explainer UI's browser tests (chromium + playwright-core) against the optimized build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
jobs="$(nproc)"

echo "=== release build + tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900)

echo "=== explainer browser tests (chromium + playwright-core)"
bash scripts/test-browser.sh

echo "=== AddressSanitizer + UndefinedBehaviorSanitizer build + tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUCLEUS_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs" --timeout 1800)

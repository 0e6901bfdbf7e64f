#!/usr/bin/env bash
# Quick start, step 2: the whole test suite, three builds.
#   1. optimized: every GoogleTest, plus the official `openai` npm client against `nucleus serve`,
#      then the explainer UI's browser tests (chromium + playwright-core)
#   2. AddressSanitizer + UndefinedBehaviorSanitizer: the same
#   3. ThreadSanitizer: the concurrency tests only (nucleus_tsan_tests: server load, server API,
#      async engine), with OpenMP regions capped to one thread (see CMakeLists.txt for why)
# Measured: 33 minutes on 2 cores from a fresh clone (2026-12-04: release 10.5 min, browser 13 s,
# ASan/UBSan 17.5 min with the unit tests in 8 gtest shards, TSan 4.2 min), over the ~20-minute budget.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
jobs="$(nproc)"
started=$SECONDS
step() { echo "=== $1 (at $((SECONDS - started)) s)"; }

step "test set-up: the openai npm client and ajv into tests/.npm (git-ignored)"
# A missing tool fails the suite: the API-compatibility tests must run, never skip.
for tool in node npm curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "error: '$tool' is required by the server tests (scripts/install-deps.sh installs it on Debian)" >&2
    exit 1
  fi
done
# Pinned: the official openai client, and ajv (+ formats, + draft-04) for the structured-output
# soundness test's independent JSON Schema validation.
npm_packages=(openai@4.104.0 ajv@8.17.1 ajv-formats@3.0.1 ajv-draft-04@1.0.0)
missing_npm=()
for spec in "${npm_packages[@]}"; do
  name="${spec%@*}" version="${spec##*@}"
  installed="$(node -p "require('./tests/.npm/node_modules/$name/package.json').version" 2>/dev/null || true)"
  [ "$installed" = "$version" ] || missing_npm+=("$spec")
done
if [ ${#missing_npm[@]} -gt 0 ]; then
  npm install --prefix tests/.npm --no-audit --no-fund --loglevel=error "${missing_npm[@]}"
fi

step "release build + tests"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900)

step "explainer browser tests (chromium + playwright-core)"
bash scripts/test-browser.sh

step "AddressSanitizer + UndefinedBehaviorSanitizer build + tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUCLEUS_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j"$jobs" --timeout 1800)

step "ThreadSanitizer build + concurrency tests"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUCLEUS_TSAN=ON >/dev/null
cmake --build build-tsan -j"$jobs" --target nucleus_tsan_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -j"$jobs" --timeout 1200)
step "all tests passed"

#!/usr/bin/env bash
# Quick start, step 2: the whole test suite, three builds.
#   1. optimized (gcc): every GoogleTest, plus the official `openai` npm client against `nucleus serve`,
#      then the explainer UI's browser tests (chromium + playwright-core)
#   2. AddressSanitizer + UndefinedBehaviorSanitizer (clang): the same unit tests, plus every libFuzzer
#      target of fuzz/ run for a few seconds on its checked-in corpus (one build serves both: the
#      library carries libFuzzer's coverage instrumentation, which plain test binaries ignore)
#   3. ThreadSanitizer (gcc): the concurrency tests only (nucleus_tsan_tests: server load, server API,
#      async engine), with OpenMP regions capped to one thread (see CMakeLists.txt for why)
# Compiles go through ccache when it is installed (scripts/install-deps.sh installs it), with paths
# relative to the checkout. Measured: 30 minutes on 2 cores from a fresh clone, cold cache
# (2026-12-05: release 11 min, browser 20 s, ASan/UBSan 14.6 min, TSan 4.2 min).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
jobs="$(nproc)"
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$root"
  # Precompiled headers (CMakeLists.txt) are cacheable only with these relaxations (ccache manual).
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
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
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900)

step "explainer browser tests (chromium + playwright-core)"
bash scripts/test-browser.sh

step "AddressSanitizer + UndefinedBehaviorSanitizer build (clang) + tests + fuzz targets on their corpora"
# A build-asan configured by gcc (before the move to clang) cannot switch compilers: start it anew.
if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' build-asan/CMakeCache.txt; then
  rm -rf build-asan
fi
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUCLEUS_SANITIZE=ON -DNUCLEUS_FUZZ=ON \
  "${launcher[@]}" >/dev/null
cmake --build build-asan -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   LSAN_OPTIONS="suppressions=$root/tests/lsan.supp" ctest --output-on-failure -j"$jobs" --timeout 1800)

step "ThreadSanitizer build + concurrency tests"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNUCLEUS_TSAN=ON "${launcher[@]}" >/dev/null
cmake --build build-tsan -j"$jobs" --target nucleus_tsan_tests
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -j"$jobs" --timeout 1200)
step "all tests passed"

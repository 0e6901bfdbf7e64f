#!/usr/bin/env bash
# Structured outputs over every shared JSON Schema (the test command samples every 12th): outputs
# generated under each compiled schema validated by ajv, and every valid instance fed through the
# token masks. Needs a release build (build/) and the test command's npm packages (tests/.npm).
#   scripts/structured-soundness.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
[ -x build/nucleus_tests ] || { echo "error: build/nucleus_tests is missing: run scripts/test.sh or build first" >&2; exit 1; }
NUCLEUS_STRUCTURED_ALL=1 ./build/nucleus_tests --gtest_filter='StructuredSoundness.*'

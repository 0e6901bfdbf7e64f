#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build, and let the default model (models/stories260K.gguf,
# part of the checkout) tell a story.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

bash scripts/story.sh

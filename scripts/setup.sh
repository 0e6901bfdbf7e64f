#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build, and let the default model (models/stories260K.gguf,
# part of the checkout) tell a story; write the explainer's speed model.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

# The explainer's speed model (random weights, 120 MB of F16; git-ignored; written once), which
# `nucleus serve` run from this folder picks up for the speed panels.
bash scripts/speed-model.sh build/nucleus models/speed-model.gguf

bash scripts/story.sh

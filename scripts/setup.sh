#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build, fetch the default model from the shared
# assets, and generate a story with it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

mkdir -p models
if [ ! -f models/stories260K.gguf ]; then
  shared="${NUCLEUS_SHARED_DIR:-$root/../shared}"
  if [ -f "$shared/models/stories260K.gguf" ]; then
    cp "$shared/models/stories260K.gguf" models/
  else
    echo "The default model is missing. Download stories260K.gguf from Hugging Face" >&2
    echo "(repository ggml-org/models, file tinyllamas/stories260K.gguf) into $root/models/." >&2
    exit 1
  fi
fi
echo "--- nucleus generate -p \"Once upon a time\" -n 120"
build/nucleus generate -m models/stories260K.gguf -p "Once upon a time" -n 120 --temp 0.8 --top-p 0.95 --seed 42

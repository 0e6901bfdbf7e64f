#!/usr/bin/env bash
# The quick start's last step (scripts/setup.sh runs it after the build): the default model,
# models/stories260K.gguf, tells a story. Greedy decoding, so the story is the same on every
# machine: the llama2.c reference story for this model (tests/quickstart_test.cpp checks it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
echo "--- build/nucleus generate -p \"Once upon a time\" -n 120 --temp 0" >&2
build/nucleus generate -m models/stories260K.gguf -p "Once upon a time" -n 120 --temp 0
echo >&2
echo "--- next: build/nucleus serve, then open http://127.0.0.1:8080/ (the explainer); build/nucleus chat" >&2

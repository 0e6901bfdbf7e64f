#!/usr/bin/env bash
# The explainer's speed model: `speed-model.sh NUCLEUS_BINARY OUTPUT.gguf [TYPE]` writes it with
# `nucleus synth` unless OUTPUT exists. Random weights over the default model's vocabulary
# (models/stories260K.gguf): 5 layers of width 1024 (FFN 2816), 120 MB of F16 — far beyond the CPU
# caches, so decode is memory-bound as it is with real models; speed does not depend on the weights'
# values. F16 by default because its decode reaches ~80% of one core's read bandwidth, where Q4_0's
# (TYPE=Q4_0: 16 layers for 107 MB) stays near 45%: one core dequantizing Q4_0 is compute-bound.
# Used by scripts/setup.sh (models/speed-model.gguf, which `nucleus serve` picks up) and by
# scripts/test-browser.sh (next to the binary it tests).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
binary="$1" output="$2" type="${3:-F16}"
[ -f "$output" ] && exit 0
layers=5
[ "$type" = F16 ] || layers=16
mkdir -p "$(dirname "$output")"
"$binary" synth -o "$output.tmp" --vocab "$root/models/stories260K.gguf" --type "$type" \
  --dim 1024 --layers "$layers" --heads 16 --kv-heads 8 --ffn 2816 --ctx 1024
mv "$output.tmp" "$output"

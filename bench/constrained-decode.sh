#!/usr/bin/env bash
# End-to-end cost of structured output (issue 19): decode tok/s of the same greedy request with and
# without a JSON Schema, alternating (the order flips every round, so a trend in the machine's load
# hits both), with the ratio per round and the median ratio. The model is TinyLlama-shaped with the
# Llama 3 vocabulary (128,256 tokens: the mask and the output matrix are as wide as they get),
# random weights, Q4_0, made on first use in bench/.models (git-ignored).
#   bench/constrained-decode.sh [ROUNDS] [TOKENS] [THREADS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nucleus="$root/build/nucleus"
rounds="${1:-5}" tokens="${2:-128}" threads="${3:-2}"
vocab="$root/../shared/vocab/ggml-vocab-llama-bpe.gguf"
models="$root/bench/.models"
model="$models/tl3-q4_0.gguf"
[ -x "$nucleus" ] || { echo "build first: $nucleus is missing" >&2; exit 1; }
if [ ! -f "$model" ]; then
  [ -f "$vocab" ] || { echo "needs $vocab (../shared beside the checkout)" >&2; exit 1; }
  mkdir -p "$models"
  "$nucleus" synth -o "$models/tl3-f16.gguf" --vocab "$vocab" --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 >&2
  "$nucleus" quantize "$models/tl3-f16.gguf" "$model" Q4_0 >&2
  rm -f "$models/tl3-f16.gguf"
fi
schema="$(mktemp)"
trap 'rm -f "$schema"' EXIT
# Two required strings: the model (random weights) writes the first one until the tokens run out,
# so every step is masked and the mask changes state only when a token closes or escapes.
echo '{"type":"object","properties":{"title":{"type":"string"},"story":{"type":"string"}},"required":["title","story"],"additionalProperties":false}' > "$schema"

decode() {  # prints the decode tok/s of one run
  "$nucleus" generate -m "$model" -p "Write a story:" -n "$tokens" --temp 0 -t "$threads" --ignore-eos "$@" 2>&1 |
    sed -n 's/.*decode: \([0-9.]*\) tok\/s.*/\1/p'
}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $tokens tokens, $threads threads"
printf '%-6s %12s %12s %8s\n' round plain constrained ratio
ratios=()
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then
    plain=$(decode); constrained=$(decode --json-schema "$schema")
  else
    constrained=$(decode --json-schema "$schema"); plain=$(decode)
  fi
  ratio=$(awk -v c="$constrained" -v p="$plain" 'BEGIN { printf "%.3f", c / p }')
  ratios+=("$ratio")
  printf '%-6s %12s %12s %8s\n' "$r" "$plain" "$constrained" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median ratio (constrained / plain): %s\n", a[int((NR + 1) / 2)] }'

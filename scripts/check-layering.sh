#!/usr/bin/env bash
# The one-way layering of src/ (docs/ARCHITECTURE.md, "Layers"): each folder may include only the
# folders listed for it here. Prints every #include that breaks the rule, with file and line, and
# exits 1 if there is one. Run by the test command (ctest: LayeringCheck).
#   scripts/check-layering.sh [SRC_DIR]
set -euo pipefail
src="${1:-$(cd "$(dirname "$0")/.." && pwd)/src}"

declare -A allowed=(
  [core]=""
  [io]="core"
  [kernels]="core io"
  [tokenizer]="core io"
  [model]="core io kernels"
  [sampling]="core kernels"
  [structured]="core io kernels tokenizer"
  [speculative]="core io kernels model tokenizer sampling structured"
  [engine]="core io kernels model tokenizer sampling structured speculative"
  [explain]="core io kernels model tokenizer sampling structured speculative engine"
  [server]="core io kernels model tokenizer sampling structured speculative engine explain"
  [cli]="core io kernels model tokenizer sampling structured speculative engine explain server"
)

violations=0
for dir in "$src"/*/; do
  folder="$(basename "$dir")"
  if [ -z "${allowed[$folder]+set}" ]; then
    echo "src/$folder/: a folder the layering rules do not know (add it to scripts/check-layering.sh and docs/ARCHITECTURE.md)"
    violations=$((violations + 1))
    continue
  fi
  # Project includes are "folder/file.h"; system and library headers use <...>.
  while IFS=: read -r file line text; do
    target="$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^/"]+)\/.*/\1/' <<<"$text")"
    [ "$target" = "$text" ] && continue  # an include without a folder (generated files)
    [ "$target" = "$folder" ] && continue
    if [[ " ${allowed[$folder]} " != *" $target "* ]]; then
      echo "${file#"$src"/}:$line: $folder/ may not include $target/ ($text)"
      violations=$((violations + 1))
    fi
  done < <(grep -Hn -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir"* || true)
done
if [ "$violations" -gt 0 ]; then
  echo "layering check: $violations include(s) break the one-way layering (see docs/ARCHITECTURE.md)" >&2
  exit 1
fi
echo "layering check: every include in $src follows the one-way layering"

#!/usr/bin/env bash
# Coverage-guided fuzzing of nucleus's parsers (libFuzzer + ASan + UBSan; docs/RELIABILITY.md).
#   scripts/fuzz.sh --list              the targets, one per line
#   scripts/fuzz.sh TARGET SECONDS      build TARGET in build-fuzz/ (clang, git-ignored) and fuzz it for
#                                       SECONDS on fuzz/corpus/TARGET; new interesting inputs are added
#                                       to that corpus, crashes land in build-fuzz/artifacts/TARGET/
# Environment: FUZZ_JOBS (build parallelism, default 1), NUCLEUS_SHARED_DIR (default ../shared).
# Ends with one summary line: seconds, execs/s, cov, ft, corpus size.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

targets() { for f in fuzz/*_fuzz.cpp; do basename "$f" _fuzz.cpp; done; }

if [ "${1:-}" = "--list" ]; then
  targets
  exit 0
fi
if [ $# -ne 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh --list | scripts/fuzz.sh TARGET SECONDS" >&2
  exit 2
fi
target="$1" seconds="$2"
if ! grep -qx -- "$target" <<<"$(targets)"; then
  echo "error: unknown fuzz target '$target'; the targets are:" >&2
  targets >&2
  exit 2
fi
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "error: $tool is required (Debian: apt-get install clang)" >&2; exit 1; }
done

# Longest input the fuzzer may build: the model-file targets need room for a tiny model; the text
# parsers stay short, so the corpus stays small and each run fast.
case "$target" in
  gguf_reader) max_len=4096 ;;
  llama2c_checkpoint|llama2c_tokenizer) max_len=2048 ;;
  chat_template|openai_request|json_schema|jinja_template) max_len=2048 ;;
  tool_call_parser|gbnf_parser) max_len=1024 ;;
  *) max_len=1024 ;;
esac

build=build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ nice -n 19 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNUCLEUS_SANITIZE=ON -DNUCLEUS_FUZZ=ON -DNUCLEUS_BUILD_TESTS=OFF >/dev/null
fi
nice -n 19 cmake --build "$build" --target "$target" -j "${FUZZ_JOBS:-1}"

corpus="fuzz/corpus/$target"
artifacts="$build/artifacts/$target"
mkdir -p "$corpus" "$artifacts"
options=(-max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1
         -artifact_prefix="$artifacts/")
[ -f "fuzz/dict/$target.dict" ] && options+=(-dict="fuzz/dict/$target.dict")
log="$build/fuzz-$target.log"
export NUCLEUS_SHARED_DIR="${NUCLEUS_SHARED_DIR:-$root/../shared}" OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
started=$SECONDS
set +e
nice -n 19 "$build/fuzz/$target" "${options[@]}" "$corpus" 2>&1 | tee "$log" | grep -E "^#[0-9]+ +(pulse|DONE)|ERROR|SUMMARY|Test unit written"
status=${PIPESTATUS[0]}
set -e
runtime=$((SECONDS - started))

# Keep the checked-in corpus minimal: the hand-made seeds (seed-*) and regression inputs
# (regression-*) stay, and of the rest only what reaches new edges (merge without hit counters).
merged="$(mktemp -d)"
find "$corpus" -maxdepth 1 -type f \( -name 'seed-*' -o -name 'regression-*' \) -exec cp {} "$merged"/ \;
if nice -n 19 "$build/fuzz/$target" -merge=1 -use_counters=0 -max_len="$max_len" -rss_limit_mb=2048 -timeout=25 "$merged" "$corpus" \
     >"$build/fuzz-$target-merge.log" 2>&1; then
  find "$corpus" -maxdepth 1 -type f ! -name 'seed-*' ! -name 'regression-*' -delete
  find "$merged" -maxdepth 1 -type f ! -name 'seed-*' ! -name 'regression-*' -exec cp {} "$corpus"/ \;
fi
rm -rf "$merged"

# The last status line ("#N DONE cov: C ft: F corp: K/S exec/s: E ...") and the final stats.
last="$(grep -E '^#[0-9]+' "$log" | tail -1 || true)"
execs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)"
cov="$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo ?)"
ft="$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo ?)"
files="$(find "$corpus" -type f | wc -l)"
bytes="$(find "$corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
rate=$(( execs / (runtime > 0 ? runtime : 1) ))
echo "summary: $target ${runtime} s, ${execs} execs (${rate}/s), cov: $cov, ft: $ft, corpus: $files files, $bytes bytes, exit $status"
exit "$status"

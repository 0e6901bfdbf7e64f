#!/usr/bin/env bash
# Builds the native llama.cpp peer from the source that npm's node-llama-cpp@3.21.1 carries as a git
# bundle (node_modules/node-llama-cpp/llama/gitRelease.bundle), into bench/.llama-cpp (git-ignored).
# No network beyond the npm registry. Takes ~25 minutes on 2 cores; later runs reuse the build.
#   bench/build-llama-cpp.sh            prints the bin/ folder holding llama-bench etc.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here/.llama-cpp"
bundle="$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -f "$bundle" ]; then
  echo "installing node-llama-cpp@3.21.1 into $dir (first use)..." >&2
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"nucleus-llama-cpp-compare","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --ignore-scripts node-llama-cpp@3.21.1 >/dev/null)
fi
if [ ! -d "$dir/src/.git" ]; then
  rm -rf "$dir/src"
  git clone -q "$bundle" "$dir/src" 2>/dev/null
fi
flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF)
if grep -q amx_int8 /proc/cpuinfo; then
  # llama.cpp's AMX matmul dies with SIGILL on these CPUs (its open PR 26954): native features
  # one by one, AMX off.
  flags+=(-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
  for f in avx avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16; do
    on=OFF; grep -qw "$f" /proc/cpuinfo && on=ON
    flag="${f^^}"; flag="${flag/AVX512_/AVX512_}"
    flags+=("-DGGML_${flag}=$on")
  done
else
  flags+=(-DGGML_NATIVE=ON)
fi
command -v ccache >/dev/null && flags+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
targets=(llama-bench llama-batched-bench llama-eval-callback)
if [ ! -x "$dir/build/bin/llama-bench" ] || [ ! -x "$dir/build/bin/llama-batched-bench" ] || [ ! -x "$dir/build/bin/llama-eval-callback" ]; then
  echo "building native llama.cpp ($(git -C "$dir/src" describe --tags --always 2>/dev/null)) in $dir/build: ~25 min on 2 cores" >&2
  cmake -S "$dir/src" -B "$dir/build" "${flags[@]}" >"$dir/cmake.log" 2>&1 || { tail -20 "$dir/cmake.log" >&2; exit 1; }
  cmake --build "$dir/build" -j"$(nproc)" --target "${targets[@]}" >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }
fi
echo "$dir/build/bin"

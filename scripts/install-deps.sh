#!/usr/bin/env bash
# Installs the Debian 12 packages nucleus builds and tests with. Idempotent: installs only
# what is missing, and does nothing (no network) when everything is present.
set -euo pipefail
packages=(build-essential cmake pkg-config git ccache
          clang libclang-rt-dev libomp-dev  # the sanitizer build and the libFuzzer targets (fuzz/)
          libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libxxhash-dev
          googletest libgtest-dev libbenchmark-dev curl
          python3-jinja2  # the chat-template tests' reference renderer
          haproxy  # scripts/cluster.sh: the balancer in front of serve replicas
          chromium)  # the explainer's browser tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node + npm run the official openai client test. Any install that provides both commands will do
# (Debian's nodejs + npm, or a nodejs package that bundles npm): only a missing command installs.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"

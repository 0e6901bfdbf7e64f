#!/usr/bin/env bash
# N `nucleus serve` replicas behind HAProxy with prefix-affine routing (deploy/haproxy/nucleus.cfg,
# docs/DEPLOY.md). Stays in the foreground; SIGINT/SIGTERM stop everything it started (replicas
# get SIGTERM: they finish what they have within their --shutdown-timeout).
#
#   scripts/cluster.sh -m MODEL --replicas N --port P [options] [-- serve flags...]
#
# Replica i (1..N) listens on 127.0.0.1:P+i with --replica-id i (its x-nucleus-replica header);
# HAProxy listens on P. Options:
#   --host ADDR          HAProxy's address (default 127.0.0.1; replicas stay on loopback)
#   --hash-bytes B       bytes of the prompt / first messages hashed when there is no x-session-id (256)
#   --balance hash|roundrobin   roundrobin: no affinity (for comparisons); default hash
#   --run-dir DIR        logs, pid files and the generated haproxy.cfg (default: a new temporary dir)
# Everything after "--" (or any flag not listed here) goes to every `nucleus serve`.
# Prints "cluster: ready on http://HOST:P" once every replica answers /health.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nucleus="${NUCLEUS_BINARY:-$root/build/nucleus}"
model="" replicas="" port="" host="127.0.0.1" hash_bytes=256 balance="hash" run_dir=""
serve_flags=()
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -m|--model) model="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --host) host="$2"; shift 2 ;;
    --hash-bytes) hash_bytes="$2"; shift 2 ;;
    --balance) balance="$2"; shift 2 ;;
    --run-dir) run_dir="$2"; shift 2 ;;
    -h|--help) usage ;;
    --) shift; serve_flags+=("$@"); break ;;
    *) serve_flags+=("$1"); shift ;;
  esac
done
[ -n "$model" ] && [ -n "$replicas" ] && [ -n "$port" ] || { echo "cluster: -m MODEL, --replicas N and --port P are required" >&2; usage; }
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || { echo "cluster: --replicas must be a positive integer, got '$replicas'" >&2; exit 2; }
[[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ $((port + replicas)) -le 65535 ] ||
  { echo "cluster: --port P needs P..P+N to be ports, got '$port'" >&2; exit 2; }
[[ "$hash_bytes" =~ ^[1-9][0-9]*$ ]] || { echo "cluster: --hash-bytes must be a positive integer" >&2; exit 2; }
case "$balance" in hash|roundrobin) ;; *) echo "cluster: --balance is hash or roundrobin, got '$balance'" >&2; exit 2 ;; esac
[ -f "$model" ] || { echo "cluster: no model file '$model'" >&2; exit 2; }
[ -x "$nucleus" ] || { echo "cluster: no nucleus binary at $nucleus (build first, or set NUCLEUS_BINARY)" >&2; exit 2; }
command -v haproxy >/dev/null || { echo "cluster: haproxy is not installed (scripts/install-deps.sh installs it)" >&2; exit 2; }
if [ -z "$run_dir" ]; then run_dir="$(mktemp -d -t nucleus-cluster.XXXXXX)"; fi
mkdir -p "$run_dir"

pids=()
stop_all() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

# The balancer's configuration: the reference file, the algorithm chosen, one server per replica.
config="$run_dir/haproxy.cfg"
if [ "$balance" = roundrobin ]; then
  sed 's/^\( *\)balance hash var(txn.affinity)$/\1balance roundrobin/' "$root/deploy/haproxy/nucleus.cfg" > "$config"
else
  cp "$root/deploy/haproxy/nucleus.cfg" "$config"
fi
for i in $(seq 1 "$replicas"); do
  echo "    server replica$i 127.0.0.1:$((port + i))" >> "$config"
done

for i in $(seq 1 "$replicas"); do
  "$nucleus" serve -m "$model" --host 127.0.0.1 --port $((port + i)) --replica-id "$i" "${serve_flags[@]}" \
    > "$run_dir/replica$i.log" 2>&1 &
  pids+=($!)
  echo $! > "$run_dir/replica$i.pid"
done
# Waits until URL's /health answers 200, failing (with the log) if PID exits or SECONDS pass.
wait_healthy() {
  local url="$1" pid="$2" name="$3" log="$4" seconds="$5"
  for _ in $(seq 1 $((seconds * 10))); do
    curl -fs -o /dev/null "$url/health" && return 0
    kill -0 "$pid" 2>/dev/null || { echo "cluster: $name exited; its log:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "cluster: $name is not healthy after $seconds s; its log:" >&2
  cat "$log" >&2
  exit 1
}

# HAProxy starts once every replica answers /health (model loaded): it counts servers up from the start.
for i in $(seq 1 "$replicas"); do
  wait_healthy "http://127.0.0.1:$((port + i))" "${pids[$((i - 1))]}" "replica $i" "$run_dir/replica$i.log" 120
done
NUCLEUS_LB_BIND="$host:$port" NUCLEUS_HASH_BYTES="$hash_bytes" haproxy -db -f "$config" > "$run_dir/haproxy.log" 2>&1 &
haproxy_pid=$!
pids+=("$haproxy_pid")
echo "$haproxy_pid" > "$run_dir/haproxy.pid"
wait_healthy "http://$host:$port" "$haproxy_pid" "haproxy" "$run_dir/haproxy.log" 10
echo "cluster: ready on http://$host:$port ($replicas replicas on ports $((port + 1))-$((port + replicas)), run dir $run_dir)"

# In the foreground until a signal, or until HAProxy itself stops. Replicas may come and go (one
# killed and started again by hand rejoins once its /health answers).
while kill -0 "$haproxy_pid" 2>/dev/null; do
  sleep 1 &
  wait $! || true
done
echo "cluster: haproxy stopped; its log:" >&2
cat "$run_dir/haproxy.log" >&2
exit 1

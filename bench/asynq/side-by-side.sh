#!/usr/bin/env bash
# Runs Lowkiq's benchmark on Orderly (noop and webhook handlers) and on asynq
# in turn, ROUNDS times, on one throwaway redis-server (no persistence, or
# appendfsync always with FSYNC=always), and prints each run. Read the
# ratios of one round: the machine is shared.
#
#   bench/asynq/side-by-side.sh            # JOBS=100000 ROUNDS=2
#   JOBS=100000 ROUNDS=3 FSYNC=always bench/asynq/side-by-side.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
JOBS="${JOBS:-100000}"
ROUNDS="${ROUNDS:-2}"
SCENARIOS="${SCENARIOS:-lowkiq,webhook}"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
dir="$(mktemp -d)"
persist=(--save '' --appendonly no)
if [ "${FSYNC:-}" = always ]; then persist=(--save '' --appendonly yes --appendfsync always); fi
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" "${persist[@]}" --daemonize yes --pidfile "$dir/redis.pid" >/dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

(cd "$root" && go build -o "$dir/orderly" ./cmd/orderly)
(cd "$here" && go build -o "$dir/asynq-bench" .)
echo "redis-server on 127.0.0.1:$port (${FSYNC:-no persistence}), $JOBS jobs, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  echo "== round $r"
  "$dir/orderly" bench --redis "redis://127.0.0.1:$port/14" --scenario "$SCENARIOS" --jobs "$JOBS"
  "$dir/asynq-bench" --redis "127.0.0.1:$port" --jobs "$JOBS"
done

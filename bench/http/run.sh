#!/usr/bin/env bash
# Lowkiq's workload through the orderly binary with HTTP enqueue (make
# bench-http): the HTTP part of bench/report. One throwaway redis-server per
# run, one node with a noop queue of 5 shards, batch 1, concurrency 5; the
# queue is paused while JOBS blank jobs are POSTed in bodies of 1000 on one
# keep-alive connection, then resumed, and the drain is timed by polling the
# queue every 10 ms on that connection. Prints enqueue and process jobs/s,
# CPU per job of the node and of Redis during the drain, and Redis commands
# per job. FSYNC=always adds a run with appendfsync always.
#
#   bench/http/run.sh                    # JOBS=100000 ROUNDS=2
#   FSYNC=always ROUNDS=3 bench/http/run.sh
set -euo pipefail
SKIP=lowkiq,asynq,memory,webhook,cluster exec "$(dirname "$0")/../report/run.sh"

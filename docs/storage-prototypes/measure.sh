#!/bin/bash
# Measures one candidate layout against a throwaway redis-server:
# memory per queued blank job over N jobs (INFO memory), Lua time per job of
# enqueue (100 jobs per call) and of advance (settle + fetch) at batch 1, 10
# and 100 (INFO commandstats). Ids are "job-" and 12 random digits.
#
# usage: docs/storage-prototypes/measure.sh l2|l3|l4|l4ids [N]
set -euo pipefail
L=$1; N=${2:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --port "$P" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/log" --pidfile "$dir/pid"
trap 'kill $(cat "$dir/pid"); rm -rf "$dir"' EXIT
R="redis-cli -p $P"
until $R ping >/dev/null 2>&1; do sleep 0.1; done
load() { $R script load "$(cat "$here/rec.lua" "$here/$1")"; }
case $L in
  l2) ENQ=$(load l2_enqueue.lua); ADV=$(load l2_advance.lua); EK="3 q:jobs q:due q:meta"; EA=""; AK="4 q:jobs q:due q:inflight q:meta"; AA=""; CNT="hlen q:jobs";;
  l3) ENQ=$(load l3_enqueue.lua); ADV=$(load l3_advance.lua); EK="4 q:jobs q:fifo q:later q:meta"; EA=""; AK="5 q:jobs q:fifo q:later q:inflight q:meta"; AA=""; CNT="zcard q:jobs";;
  l4|l4ids) W=0; [ $L = l4ids ] && W=1
     ENQ=$(load l4_enqueue.lua); ADV=$(load l4_advance.lua); EK="5 q:jobs q:fifo q:later q:meta q:ids"; EA=$W; AK="6 q:jobs q:fifo q:later q:inflight q:meta q:ids"; AA=$W; CNT="hlen q:jobs";;
esac
mem() { $R info memory | grep '^used_memory:' | cut -d: -f2 | tr -d '\r'; }
usec() { $R info commandstats | grep cmdstat_evalsha | sed 's/.*usec=\([0-9]*\),.*/\1/'; }
IDS=$(for i in $(seq 100); do printf 'job-__rand_int__ '; done)
b=$(mem); $R config resetstat >/dev/null
redis-benchmark -p "$P" -q -n $((N / 100)) -r 100000000 -c 4 -P 4 evalsha "$ENQ" $EK $EA $IDS >/dev/null 2>&1
a=$(mem); n=$($R $CNT)
printf '%s: jobs=%d bytes/job=%d enqueue_lua_us/job=%.2f' "$L" "$n" $(( (a - b) / n )) "$(echo "$(usec) / $n" | bc -l)"
for batch in 1 10 100; do
  $R config resetstat >/dev/null
  calls=$(( N / 10 / batch ))
  redis-benchmark -p "$P" -q -n $calls -c 1 evalsha "$ADV" $AK $batch $AA >/dev/null 2>&1
  printf ' advance_b%d_lua_us/job=%.2f' $batch "$(echo "$(usec) / $calls / $batch" | bc -l)"
done
echo

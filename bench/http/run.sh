#!/usr/bin/env bash
# Lowkiq's workload through the orderly binary with HTTP enqueue: one
# throwaway redis-server (no persistence, or appendfsync always with
# FSYNC=always), one node with a noop queue of 5 shards, batch 1,
# concurrency 5. The queue is paused while 100k blank jobs are POSTed in
# 100 requests of 1000 on one keep-alive connection, then resumed; the
# drain is timed by polling the queue every 20 ms. Prints enqueue and
# process jobs/s, CPU per job of the node and of Redis during the drain,
# and Redis commands per job.
#
#   bench/http/run.sh            # make bench-http
#   FSYNC=always bench/http/run.sh
set -euo pipefail
FSYNC="${FSYNC:-}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$(mktemp -d)/orderly"
(cd "$root" && go build -o "$bin" ./cmd/orderly)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
persist=(--save '' --appendonly no)
[ "$FSYNC" = always ] && persist=(--save '' --appendonly yes --appendfsync always)
redis-server --port $port --bind 127.0.0.1 --dir $dir "${persist[@]}" --daemonize yes --pidfile $dir/r.pid >/dev/null
sleep 0.3
cat > $dir/o.yaml <<Y
queues:
  - name: bench
    shards: 5
    batch_size: 1
    handler: {type: noop}
Y
$bin --config $dir/o.yaml --redis redis://127.0.0.1:$port/0 --http 127.0.0.1:$hport --concurrency 5 --log-level warn > $dir/node.log 2>&1 &
npid=$!
trap 'kill $npid 2>/dev/null; redis-cli -p $port shutdown nosave >/dev/null 2>&1; rm -rf $dir "$(dirname "$bin")"' EXIT
for _ in $(seq 100); do curl -sf localhost:$hport/readyz >/dev/null 2>&1 && break; sleep 0.1; done
curl -sf -X POST localhost:$hport/api/v1/queues/bench/pause >/dev/null
python3 - "$dir" <<P
import json,sys
d=sys.argv[1]
for f in range(100):
    open(f"{d}/b{f}.json","w").write(json.dumps([{"id":f"job-{f*1000+i}"} for i in range(1000)]))
P
# One keep-alive connection, as a client library would use.
read t0 t1 < <(python3 - "$dir" "$hport" <<'P'
import http.client, sys, time
d, port = sys.argv[1], int(sys.argv[2])
bodies = [open(f"{d}/b{f}.json", "rb").read() for f in range(100)]
c = http.client.HTTPConnection("127.0.0.1", port)
t0 = time.time()
for b in bodies:
    c.request("POST", "/api/v1/queues/bench/jobs", body=b, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 202:
        sys.exit(f"enqueue answered {r.status}")
print(t0, time.time())
P
)
rc0=$(redis-cli -p $port info commandstats | tr -d '\r' | awk -F'[=,]' '/^cmdstat/{s+=$2} END{print s}')
rcpu0=$(redis-cli -p $port info cpu | tr -d '\r' | awk -F: '/used_cpu_(sys|user):/{s+=$2} END{print s}')
ncpu0=$(awk '{print $14+$15}' /proc/$npid/stat)
t2=$(date +%s.%N)
curl -sf -X POST localhost:$hport/api/v1/queues/bench/resume >/dev/null
while :; do
  len=$(curl -sf localhost:$hport/api/v1/queues/bench | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("length",-1), d.get("busy",0))')
  [ "$len" = "0 0" ] && break
  sleep 0.02
done
t3=$(date +%s.%N)
rc1=$(redis-cli -p $port info commandstats | tr -d '\r' | awk -F'[=,]' '/^cmdstat/{s+=$2} END{print s}')
rcpu1=$(redis-cli -p $port info cpu | tr -d '\r' | awk -F: '/used_cpu_(sys|user):/{s+=$2} END{print s}')
ncpu1=$(awk '{print $14+$15}' /proc/$npid/stat)
tck=$(getconf CLK_TCK)
python3 - <<P
t0,t1,t2,t3=$t0,$t1,$t2,$t3
n=100000
print(f"fsync={'$FSYNC' or 'off'} http enqueue {n/(t1-t0):,.0f} jobs/s ({t1-t0:.2f}s, 100 POSTs of 1000); process {n/(t3-t2):,.0f} jobs/s ({t3-t2:.2f}s incl. 20 ms polls); node CPU {( $ncpu1-$ncpu0)/$tck/n*1e6:.1f} us/job, Redis CPU {($rcpu1-$rcpu0)/n*1e6:.1f} us/job (poll requests included), Redis cmds/job {($rc1-$rc0)/n:.2f}")
P

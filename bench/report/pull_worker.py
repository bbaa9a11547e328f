"""The Python pull worker of bench-report's pull runs (sdk/python's Worker).

The protocol of the report's workers (bench/report/pullworker.go): prints
"ready", pulls from the first line on stdin, prints "handled" once its
handler has seen --expect jobs (when set), stops gracefully at the second
line or EOF, and prints {"jobs": n, "leases": m}. Its handler acknowledges
every id of a window.

    python3 bench/report/pull_worker.py --url http://127.0.0.1:8080 --queue bench --concurrency 8

--sdk DIR takes the orderly package from DIR (an older sdk/python, for a
before-and-after row) instead of this checkout's. --profile FILE profiles
every thread with cProfile (CPU time of the thread) and writes the merged
statistics, by own time and by cumulative time, to FILE at the stop.
"""

import argparse
import json
import os
import sys
import threading
import time



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdk", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python"))
    ap.add_argument("--url", required=True)
    ap.add_argument("--queue", default="bench")
    ap.add_argument("--token", default="")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-ids", type=int, default=1)
    ap.add_argument("--wait", type=float, default=5.0)
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("--profile", default="")
    a = ap.parse_args()
    profiles = profile_threads() if a.profile else None
    sys.path.insert(0, a.sdk)
    from orderly import Client, Worker
    lock = threading.Lock()
    count = {"jobs": 0, "leases": 0}

    def handle(w):
        with lock:
            before = count["jobs"]
            count["jobs"] += len(w.jobs)
            count["leases"] += 1
            if a.expect > 0 and before < a.expect <= count["jobs"]:
                print("handled", flush=True)

    worker = Worker(Client(a.url, a.token or None), a.queue, handle, concurrency=a.concurrency,
                    max_ids=a.max_ids, wait=a.wait)
    print("ready", flush=True)
    if not sys.stdin.readline():
        sys.exit("pull_worker: no gate line")
    worker.start()
    sys.stdin.readline()
    if not worker.stop(60):
        sys.exit("pull_worker: the loops did not end")
    if profiles is not None:
        write_profile(profiles, a.profile)
    print(json.dumps(count), flush=True)


def profile_threads():
    """Profiles every thread started from now on; returns the list of their profilers."""
    import cProfile
    profiles = []
    run = threading.Thread.run

    def profiled(self):
        p = cProfile.Profile(time.thread_time)
        profiles.append(p)
        p.runcall(run, self)

    threading.Thread.run = profiled
    return profiles


def write_profile(profiles, path):
    import pstats
    with open(path, "w") as f:
        st = pstats.Stats(*profiles, stream=f)
        st.sort_stats("tottime").print_stats(40)
        st.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()

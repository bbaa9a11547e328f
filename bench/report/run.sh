#!/usr/bin/env bash
# One-run performance report (make bench-report): builds this release's
# orderly binary, the previous release's (storage layout 1, git revision
# OLD_REV, built from `git archive` as the upgrade tests do), the asynq
# benchmark (bench/asynq) and the redisstore test binary (its memory
# benchmark drives layout 1's scripts and layout 2), then runs
# bench/report: every measurement on throwaway redis-servers, ROUNDS times,
# the releases' order alternating, and prints the raw lines and one
# markdown table.
#
#   make bench-report                                  # JOBS=100000 ROUNDS=2 MEMJOBS=1000000
#   JOBS=20000 MEMJOBS=100000 ROUNDS=1 make bench-report
#   FSYNC=always SKIP=asynq,cluster make bench-report
#   JOBS=20000 ROUNDS=1 SKIP=lowkiq,asynq,memory,features,webhook,http,cluster make bench-report   # pull rows only
#
# SKIP leaves out parts: lowkiq, asynq, memory, features, webhook, pull, http, cluster.
# The pull part drains a pull queue with a Go, a Python (python3) and a
# TypeScript (node, sdk/typescript built here with npm ci and tsc) worker,
# each a process of its own holding PULL_CONCURRENCY leases [2] of at most
# PULL_MAX_IDS ids [100], from a queue of batch_size PULL_BATCH [1]; a worker
# whose runtime is missing is left out.
# PULL_LANGS picks the pull workers (go,python,typescript [all]);
# PULL_PYTHON_REV=<git revision> adds a row of that revision's sdk/python
# worker right before the current one (a before-and-after in one run):
#   JOBS=20000 ROUNDS=1 SKIP=lowkiq,asynq,memory,features,webhook,http,cluster PULL_LANGS=python PULL_PYTHON_REV=HEAD~1 make bench-report
# The Python worker's own cost, against a fake node that answers at once with
# leases of many jobs (not part of this report):
#   go run ./bench/report pull-ceiling --sdk /tmp/old/sdk/python,sdk/python --per-lease 100 --rounds 2
# FSYNC=always adds Lowkiq's workload, asynq and HTTP enqueue with
# appendfsync always.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
JOBS="${JOBS:-100000}"
ROUNDS="${ROUNDS:-2}"
MEMJOBS="${MEMJOBS:-1000000}"
SKIP="${SKIP:-}"
OLD_REV="${OLD_REV:-1e73f1f}"
fsync=false
[ "${FSYNC:-}" = always ] && fsync=true

dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
echo "building into $dir" >&2
(cd "$root" && go build -o "$dir/orderly" ./cmd/orderly)
(cd "$root" && go build -o "$dir/report" ./bench/report)
old=()
case ",$SKIP," in *,lowkiq,*webhook,*|*,webhook,*lowkiq,*) OLD_REV= ;; esac # nothing runs the previous release
if [ -z "$OLD_REV" ]; then
  :
elif git -C "$root" cat-file -e "$OLD_REV^{commit}" 2>/dev/null; then
  mkdir "$dir/old-src"
  git -C "$root" archive "$OLD_REV" | tar -x -C "$dir/old-src"
  (cd "$dir/old-src" && GOFLAGS=-mod=mod go build -o "$dir/orderly-$OLD_REV" ./cmd/node)
  old=(--old "$dir/orderly-$OLD_REV" --old-rev "$OLD_REV")
else
  echo "revision $OLD_REV of the previous release is not in this checkout: this release only" >&2
fi
asynq=()
case ",$SKIP," in *,asynq,*) ;; *)
  (cd "$root/bench/asynq" && go build -o "$dir/asynq-bench" .)
  asynq=(--asynq "$dir/asynq-bench") ;;
esac
PULL_LANGS="${PULL_LANGS:-go,python,typescript}"
pybefore=()
case ",$SKIP," in *,pull,*) ;; *)
  if [ -n "${PULL_PYTHON_REV:-}" ]; then
    mkdir "$dir/py-before"
    git -C "$root" archive "$PULL_PYTHON_REV" sdk/python | tar -x -C "$dir/py-before"
    pybefore=(--pull-python-before "$dir/py-before/sdk/python" --pull-python-before-rev "$(git -C "$root" rev-parse --short "$PULL_PYTHON_REV")")
  fi
  case ",$PULL_LANGS," in *,typescript,*)
    if command -v node >/dev/null && command -v npm >/dev/null; then
      (cd "$root/sdk/typescript" && npm ci --no-audit --no-fund >&2 && npm run build >&2)
    fi ;;
  esac ;;
esac
store=()
case ",$SKIP," in *,memory,*features,*|*,features,*memory,*) ;; *)
  (cd "$root" && go test -c -o "$dir/redisstore.test" ./persistence/redisstore)
  store=(--storetest "$dir/redisstore.test") ;;
esac
"$dir/report" --new "$dir/orderly" "${old[@]}" "${asynq[@]}" "${store[@]}" \
  --jobs "$JOBS" --rounds "$ROUNDS" --memjobs "$MEMJOBS" --fsync="$fsync" --skip "$SKIP" \
  --root "$root" --pull-concurrency "${PULL_CONCURRENCY:-2}" --pull-max-ids "${PULL_MAX_IDS:-100}" --pull-batch "${PULL_BATCH:-1}" \
  --pull-langs "$PULL_LANGS" "${pybefore[@]}"

#!/usr/bin/env bash
# Benchmark of the HTTP image service (thumbor URL syntax) against what users deploy instead, on this machine:
# thumbor 7.8, nginx + image_filter (with and without proxy_cache), a pyvips server and nginx serving ready
# thumbnails, all fetching from one local nginx origin and loaded by the same wrk. README.md beside this says
# what each figure means.
#
#   scripts/bench-service/run.sh
#       RUNS=5                  runs (default 1); each starts and stops every server afresh
#       SECONDS_PER_RUN=10      length of the hot and overload loads (cold asks each photo once, however long)
#       ONLY=thumbor,imagefilter,vips,static,service   the peers to run (default all)
#       IMAGE_SERVICE_BIN=.build/release/image-service the service under test (skipped when unset)
#       ANCHOR_CMD='...'        a command whose last stdout line is 'images/s N', run once per run
#   and, rarely: COLD_IMAGES (200), COLD_CONNECTIONS (8), HOT_CONNECTIONS (8), HOT_THREADS (1),
#   OVERLOAD_CONNECTIONS (64), TIMEOUT_S (10), WORK (out/bench-service)
#
# Does not build the service. Installs what it needs the first time (setup.sh). Results: one JSON per run in
# $WORK/results/STAMP/, and summary.md there (also printed).
set -euo pipefail
export LC_ALL=C
# A relative IMAGE_SERVICE_BIN is relative to where the script was started, not to the repository root.
if [ -n "${IMAGE_SERVICE_BIN:-}" ]; then IMAGE_SERVICE_BIN=$(realpath -- "$IMAGE_SERVICE_BIN"); export IMAGE_SERVICE_BIN; fi
cd "$(dirname "$0")/../.."
HERE=scripts/bench-service
export WORK=${WORK:-out/bench-service}
RUNS=${RUNS:-1}

mkdir -p "$WORK"
# One run at a time per work folder: a second would take the first one's servers for leftovers and stop them.
exec 9>"$WORK/lock"
flock -n 9 || { echo "bench-service: another run.sh is using $WORK (lock $WORK/lock)" >&2; exit 1; }

bash "$HERE/setup.sh"
PY=$WORK/venv/bin/python

# Every server is started by bench.py and stopped by it. bench.py runs in the background so that a signal
# reaches these traps at once (bash runs a trap only after a foreground command ends): INT or TERM is passed
# on to bench.py as TERM, which stops its servers; the EXIT trap then stops, by PID, whatever a crashed or
# killed bench.py left running (the PIDs it still holds are in $WORK/pids).
bench_pid=""
cleanup() { "$PY" "$HERE/procs.py" --stop-pidfile "$WORK/pids" || true; }
on_signal() {
    if [ -n "$bench_pid" ]; then kill -TERM "$bench_pid" 2>/dev/null || true; wait "$bench_pid" 2>/dev/null || true; fi
    exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

if [ -n "${IMAGE_SERVICE_BIN:-}" ] && [ ! -x "$IMAGE_SERVICE_BIN" ]; then
    echo "bench-service: IMAGE_SERVICE_BIN=$IMAGE_SERVICE_BIN is not an executable file" >&2
    exit 1
fi
[ -n "${IMAGE_SERVICE_BIN:-}" ] || echo "bench-service: IMAGE_SERVICE_BIN not set: the service is skipped, peers only" >&2
[ -n "${ANCHOR_CMD:-}" ] || echo "bench-service: ANCHOR_CMD not set: no anchor" >&2

RESULTS=$WORK/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RESULTS"
status=0
for run in $(seq 1 "$RUNS"); do
    "$PY" "$HERE/bench.py" --out "$RESULTS/run-$run.json" --run "$run" &
    bench_pid=$!
    wait "$bench_pid" || { status=$?; break; }
    bench_pid=""
done
if compgen -G "$RESULTS/run-*.json" >/dev/null; then
    "$PY" "$HERE/summarize.py" "$RESULTS" | tee "$RESULTS/summary.md"
    echo "bench-service: results in $RESULTS" >&2
fi
exit $status

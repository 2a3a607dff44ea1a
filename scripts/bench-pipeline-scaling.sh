#!/usr/bin/env bash
# How a cold pipeline (B12, `sample-cli bench pipeline`) scales with cores: for each N in CORES, the benchmark
# runs under `taskset` on N cores with N decode slots, and its anchor decodes on N threads in the same process.
# The rounds alternate the core counts so that a noisy neighbour hits every N alike; medians are printed, with
# the pipeline's rate over the hand-written fetch the same run measured on N threads (the least a fetch with a
# disk copy costs on the machine), and how idle the cores were while the pipeline fetched and during the
# hand-written fetch (idle cores while there is work: hand-offs between threads, not CPU, held the fetches up).
#
#   scripts/bench-pipeline-scaling.sh                 # CORES="1 2" ROUNDS=5 IMAGES=1000 PAUSE=30
#   CORES="1 2 4 8 16" scripts/bench-pipeline-scaling.sh   # on a larger machine
#   ARGS="--transport blocking" scripts/bench-pipeline-scaling.sh   # more options for every run
#
# Each run starts PAUSE seconds after the one before: a run deletes the thousands of files it wrote when it
# ends, and on ext4 without a journal every file created in the next minute or more has its inode picked past
# those (a scan per file, which made file creations up to three times as costly). A pause shortens that
# without ending it; the benchmark says when its directory is on such a file system, and figures to compare
# are taken with TMPDIR on one with a journal (docs/benchmarks.md), where PAUSE=0 is fine.
#
# Targets: 2 cores >= 1.8x of 1; N cores >= 0.75 x N x the one-thread anchor.
set -euo pipefail
cd "$(dirname "$0")/.."
CORES=${CORES:-"1 2"}
ROUNDS=${ROUNDS:-5}
IMAGES=${IMAGES:-1000}
PAUSE=${PAUSE:-30}
CLI=${CLI:-.build/release/sample-cli}
read -r -a extra <<< "${ARGS:-}"
[ -x "$CLI" ] || swift build -c release --product sample-cli >/dev/null
available=$(nproc)
results=$(mktemp); trap 'rm -f "$results"' EXIT
# A sandbox that refuses to pin threads (gVisor may) still runs every round, on every core: the one-core rounds'
# anchor (one decoding thread) is still right, their rate is not.
pins=1
taskset -c 0 true 2>/dev/null || { pins=0; echo "note: taskset cannot pin threads here; every round runs on all $available cores" >&2; }
first=1
for round in $(seq "$ROUNDS"); do
    for n in $CORES; do
        [ "$n" -le "$available" ] || { echo "skipping $n cores: this machine has $available" >&2; continue; }
        [ "$first" = 1 ] || sleep "$PAUSE"
        first=0
        pin=()
        [ "$pins" = 1 ] && pin=(taskset -c "0-$((n - 1))")
        output=$("${pin[@]}" "$CLI" bench pipeline --images "$IMAGES" --threads "$n" "${extra[@]}" || true)
        line=$(echo "$output" | grep '^B12 pipeline' || true)
        cores=$(echo "$output" | grep '^cores:' || true)
        anchor=$(echo "$line" | sed -n 's/.* \([0-9.]*\)x the direct decodes.*/\1/p')
        rate=$(echo "$line" | sed -n 's/^B12 pipeline: \([0-9]*\) images\/s.*/\1/p')
        floor=$(echo "$line" | sed -n 's/.* \([0-9.]*\)x the hand-written fetch.*/\1/p')
        # How idle the cores were while the pipeline fetched, and during the hand-written fetch.
        idle=$(echo "$cores" | sed -n 's/.* \([0-9]*\)% idle while fetching.*/\1/p')
        floor_idle=$(echo "$cores" | sed -n 's/.* \([0-9]*\)% idle during the hand-written fetch.*/\1/p')
        [ -n "$rate" ] && echo "$n $rate $anchor ${floor:-0} ${idle:-0} ${floor_idle:-0}" >> "$results"
        echo "round $round, $n core(s): ${rate:-failed} images/s, ${anchor:-?}x its anchor, ${floor:-?}x the hand-written fetch, ${idle:-?}% idle (hand-written: ${floor_idle:-?}%)" >&2
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, rate, ratio, floor, idle, floor_idle = line.split()
    rows.setdefault(int(n), []).append((float(rate), float(ratio), float(floor), float(idle), float(floor_idle)))
if not rows:
    sys.exit("no results")
def median(values): return statistics.median(values)
base = min(rows)
base_rate = median([row[0] for row in rows[base]])
# The one-thread anchor, from the runs on one core: images/s divided by its ratio to the anchor.
one_anchor = median([row[0] / row[1] for row in rows[1]]) if 1 in rows else None
print(f"{'cores':>5} {'images/s (median, range)':>28} {'x anchor':>9} {'x ' + str(base) + ' core':>10} {'/ (N x 1-thread anchor)':>24} {'x hand-written':>15} {'% idle (hand-written)':>22}")
for n in sorted(rows):
    rates, ratios, floors, idles, floor_idles = zip(*rows[n])
    per_anchor = f"{median(rates) / (n * one_anchor):.2f}" if one_anchor else "-"
    idle = f"{median(idles):.0f} ({median(floor_idles):.0f})"
    print(f"{n:>5} {median(rates):>10.0f} ({min(rates):.0f}-{max(rates):.0f}){'':>8} {median(ratios):>9.2f} "
          f"{median(rates) / base_rate:>10.2f} {per_anchor:>24} {median(floors):>15.2f} {idle:>22}")
PY

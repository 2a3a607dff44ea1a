#!/usr/bin/env bash
# B12 as docs/benchmarks.md reports it: `sample-cli bench pipeline` RUNS times on the shared pool (the default),
# each run followed by one with --thread-per-fetch, so that a noisy stretch of the machine hits both alike; then,
# for each kind, the range of every figure over its runs and in how many runs each target held.
#
# Both kinds create a file per image in the temporary directory: on ext4 without a journal, creating files
# costs several times more for a minute or more after a run deleted its own, so runs back to back there
# measure that (the benchmark prints a note). Set TMPDIR to a file system with a journal, as below.
#
# Usage: scripts/bench-pipeline-pairs.sh [RUNS]                  (default: 5)
#        TMPDIR=/mnt/bench scripts/bench-pipeline-pairs.sh 5
#        ARGS="--images 2000" scripts/bench-pipeline-pairs.sh   # more options for every run
# Reports go to out/bench/pipeline-KIND-N.json; the summary (markdown) to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
CLI=${CLI:-.build/release/sample-cli}
read -r -a extra <<< "${ARGS:-}"
[ -x "$CLI" ] || swift build -c release --product sample-cli >/dev/null
mkdir -p out/bench
for run in $(seq 1 "$runs"); do
    echo "== run $run of $runs: the shared pool, then a thread per fetch" >&2
    "$CLI" bench pipeline "${extra[@]}" --json-file "out/bench/pipeline-pool-$run.json" >&2
    "$CLI" bench pipeline --thread-per-fetch "${extra[@]}" --json-file "out/bench/pipeline-thread-per-fetch-$run.json" >&2
done
python3 - "$runs" <<'EOF'
import json
import sys

runs = int(sys.argv[1])
# (label, decimals, how to read it from a report, the target's test, the target in words)
FIGURES = [
    ("images/s", 0, lambda r: r["imagesPerSecond"], lambda v: v >= 250, ">= 250 on two cores"),
    ("x the bare decodes", 2, lambda r: r["ratioToAnchor"], lambda v: v >= 0.85, ">= 0.85"),
    ("x the hand-written fetch", 2, lambda r: r["ratioToFloor"], lambda v: v >= 0.95, ">= 0.95"),
    ("the hand-written fetch, x the bare decodes", 2,
     lambda r: r["floorImagesPerSecond"] / r["anchorImagesPerSecond"], None, ""),
    ("wake-ups an image", 1, lambda r: r["voluntarySwitchesPerImage"]["pipeline"], lambda v: v <= 5, "<= 5"),
    ("switches an image", 1,
     lambda r: r["voluntarySwitchesPerImage"]["pipeline"] + r["involuntarySwitchesPerImage"]["pipeline"],
     lambda v: v <= 7, "<= 7"),
    ("CPU an image, us (less the origin's)", 0, lambda r: r["cpuPerImageMicroseconds"]["pipeline"], None, ""),
]
print(f"B12 over {runs} alternating pairs\n")
print("| figure | " + " | ".join(["shared pool", "a thread per fetch", "target"]) + " |")
print("|---|---|---|---|")
reports = {kind: [json.load(open(f"out/bench/pipeline-{kind}-{run}.json")) for run in range(1, runs + 1)]
           for kind in ("pool", "thread-per-fetch")}
for label, digits, read, met, target in FIGURES:
    cells = []
    for kind in ("pool", "thread-per-fetch"):
        values = [read(report) for report in reports[kind]]
        cell = f"{min(values):.{digits}f}–{max(values):.{digits}f}"
        if met:
            cell += f" (met in {sum(1 for value in values if met(value))} of {len(values)})"
        cells.append(cell)
    print(f"| {label} | {cells[0]} | {cells[1]} | {target} |")
EOF

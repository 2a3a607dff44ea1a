#!/usr/bin/env bash
# The scroll's comparison as a benchmark: `sample-cli scroll --compare --compare-loaders-only` on the photo feed,
# conventional loading against the pipeline in the same run, for every script (SCRIPTS) on every shared-link
# profile, RUNS times; then the range of each figure over the runs and whether the targets held in every run.
# Usage: scripts/bench-scroll-compare.sh [RUNS] [PROFILE:SECONDS ...]   (default: 5 lte:20 3g:20)
#        SCRIPTS="fling steady" scripts/bench-scroll-compare.sh 3 lte:20
# Reports go to out/bench/scroll-compare-PROFILE-SCRIPT-N.json; the summary (markdown) to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
profiles=("$@")
[ ${#profiles[@]} -eq 0 ] && profiles=(lte:20 3g:20)
read -r -a scripts <<< "${SCRIPTS:-fling steady back-and-forth browse}"
swift build -c release --product sample-cli >/dev/null
mkdir -p out/bench
for run in $(seq 1 "$runs"); do
    for profile in "${profiles[@]}"; do
        network=${profile%%:*}
        seconds=${profile##*:}
        for script in "${scripts[@]}"; do
            echo "== $network, $script, run $run of $runs ($seconds s each way)" >&2
            .build/release/sample-cli scroll --network "$network" --script "$script" --seconds "$seconds" \
                --compare --compare-loaders-only --quiet \
                --json-file "out/bench/scroll-compare-$network-$script-$run.json" >/dev/null
        done
    done
done
python3 scripts/scroll_compare_summary.py "$runs" "${scripts[*]}" "${profiles[@]}"

#!/usr/bin/env bash
# The scroll's comparison as a benchmark: `sample-cli scroll --compare` on the photo feed, read a screen at a
# time (--script browse), RUNS times on each shared-link profile, then the range of each figure over the runs
# and of the pipeline's ratios to conventional loading (first-visit first pixels, cells showing an image).
# Usage: scripts/bench-scroll-compare.sh [RUNS] [PROFILE:SECONDS ...]   (default: 5 lte:20 slow4g:24)
# Reports go to out/bench/scroll-compare-PROFILE-N.json; the summary to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
shift || true
profiles=("$@")
[ ${#profiles[@]} -eq 0 ] && profiles=(lte:20 slow4g:24)
swift build -c release --product sample-cli >/dev/null
mkdir -p out/bench
for profile in "${profiles[@]}"; do
    network=${profile%%:*}
    seconds=${profile##*:}
    for run in $(seq 1 "$runs"); do
        echo "== $network, run $run of $runs ($seconds s a scroll, four scrolls)" >&2
        .build/release/sample-cli scroll --network "$network" --script browse --seconds "$seconds" --compare --quiet \
            --json "out/bench/scroll-compare-$network-$run.json" >/dev/null
    done
done
python3 - "$runs" "${profiles[@]}" <<'PY'
import json, sys
runs = int(sys.argv[1])
def span(values, fmt="{:.0f}"):
    return (fmt + "–" + fmt).format(min(values), max(values)) if values else "-"
for profile in sys.argv[2:]:
    network = profile.split(":")[0]
    reports = [json.load(open(f"out/bench/scroll-compare-{network}-{n}.json")) for n in range(1, runs + 1)]
    print(f"\n{network}: {runs} runs of `sample-cli scroll --network {network} --script browse --compare`")
    rows = [
        ("first visits, first pixels p50 (ms)", lambda r: r["timeToFirstPixelsFirstVisits"]["p50Ms"], "{:.0f}"),
        ("first visits, first pixels p95 (ms)", lambda r: r["timeToFirstPixelsFirstVisits"]["p95Ms"], "{:.0f}"),
        ("first visits that showed pixels before the cell left (%)", lambda r: 100 * r["timeToFirstPixelsFirstVisits"]["count"]
            / max(1, r["timeToFirstPixelsFirstVisits"]["count"] + r["firstVisitsWithoutPixels"]), "{:.0f}"),
        ("cells showing an image (%)", lambda r: 100 * r["visibleCellsShowingImage"], "{:.1f}"),
        ("dropped frames", lambda r: r["droppedFrames"], "{:.0f}"),
        ("main-thread work p99 (ms)", lambda r: r["mainThreadWorkMsPerFrame"]["p99"], "{:.2f}"),
        ("bytes transferred (MB)", lambda r: r["bytesTransferred"] / 1e6, "{:.1f}"),
    ]
    names = ["conventional", "pipeline", "baseline JPEG", "progressive JPEG"]
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, get, fmt in rows:
        print(f"| {label} | " + " | ".join(span([get(r[name]) for r in reports], fmt) for name in names) + " |")
    def ratios(name, base, get):
        return [get(r[name]) / get(r[base]) for r in reports if get(r[base]) > 0]
    fv50 = lambda r: r["timeToFirstPixelsFirstVisits"]["p50Ms"]
    fv95 = lambda r: r["timeToFirstPixelsFirstVisits"]["p95Ms"]
    cov = lambda r: r["visibleCellsShowingImage"]
    print(f"\npipeline / conventional: first-visit first pixels p50 {span(ratios('pipeline', 'conventional', fv50), '{:.2f}')}x, "
          f"p95 {span(ratios('pipeline', 'conventional', fv95), '{:.2f}')}x; cells showing an image "
          f"{span(ratios('pipeline', 'conventional', cov), '{:.2f}')}x")
    print(f"progressive / baseline: first-visit first pixels p50 {span(ratios('progressive JPEG', 'baseline JPEG', fv50), '{:.2f}')}x, "
          f"p95 {span(ratios('progressive JPEG', 'baseline JPEG', fv95), '{:.2f}')}x")
PY

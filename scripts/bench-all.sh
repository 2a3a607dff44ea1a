#!/usr/bin/env bash
# Every benchmark of docs/benchmarks.md, one after another, each printing its
# figures as ratios to an anchor measured in the same run (see each script for how). `make bench` runs this.
#
#   scripts/bench-all.sh              # everything (about 10 minutes on 2 cores, after the release build)
#   ONLY="cache fetch" scripts/bench-all.sh
#
# Sections (ONLY= picks some): decode (B5-B10, scripts/bench-decode.sh), peers (Pillow, vips, djpeg side by
# side, scripts/bench-peers.sh), modern (AVIF and JPEG XL against libavif/libjxl, scripts/bench-modern-formats.sh), cache (B1-B4), fetch (B11, scripts/bench-fetch.sh), coalesce (B13),
# pipeline (B12), scroll (B14, three runs of `sample-cli scroll --warm`), service (image-service against
# thumbor, nginx image_filter and a pyvips server, scripts/bench-service/run.sh, which installs the peers). Each section's output is also kept in out/bench/SECTION.txt, from which the
# README's tables are copied. A section that fails is reported and the others still run; the exit status is
# 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench}
ONLY=${ONLY:-decode peers modern cache fetch coalesce pipeline scroll service}
CLI=.build/release/sample-cli
mkdir -p "$OUT"

echo "bench-all: swift build -c release --product sample-cli" >&2
swift build -c release --product sample-cli >&2 || exit 1

failed=()
section() { # NAME COMMAND...: runs one section, tees its output to $OUT/NAME.txt
    local name=$1; shift
    case " $ONLY " in *" $name "*) ;; *) return ;; esac
    echo
    echo "=== $name: $* ==="
    if ! "$@" 2>&1 | tee "$OUT/$name.txt"; then failed+=("$name"); fi
}

section decode bash scripts/bench-decode.sh
section peers bash scripts/bench-peers.sh
section modern bash scripts/bench-modern-formats.sh
section cache "$CLI" bench cache
section fetch bash scripts/bench-fetch.sh
section coalesce "$CLI" bench coalesce
# B12 starts half a minute after the sections before it deleted their files: on ext4 without a journal, each
# file created within 30 s of many deletions has its inode picked past them (see bench-pipeline-scaling.sh).
b12() { sleep 30; "$CLI" bench pipeline; }
section pipeline b12
# B14: 10k cells, 3 columns, 256 px, the fling script (8 screens/s) at 120 Hz over the loopback origin, from
# cold caches, a warm disk cache and warm memory caches. Targets in docs/benchmarks.md; read the tables.
b14() {
    for warm in cold disk memory; do
        "$CLI" scroll --feed small --items 10000 --columns 3 --rows 4 --cell-size 256 --fps 120 --script fling --network loopback \
            --seconds 8 --warm "$warm" --quiet --json-file "$OUT/scroll-$warm.json" || return 1
    done
    # Warm memory again, with rendered caches far larger than the run needs, as a check that the default limit
    # (80 MB) already holds every cell the run visits.
    "$CLI" scroll --feed small --items 10000 --columns 3 --rows 4 --cell-size 256 --fps 120 --script fling --network loopback \
        --seconds 8 --warm memory --rendered-cache-mb 1024 --quiet --json-file "$OUT/scroll-memory-sized.json"
}
section scroll b14

service() {
    swift build -c release --product image-service >&2 || return 1
    IMAGE_SERVICE_BIN=.build/release/image-service RUNS=${SERVICE_RUNS:-5} \
        ANCHOR_CMD="$CLI bench thumbnail-anchor out/bench-service/images/img-*.jpg --threads 2" \
        bash scripts/bench-service/run.sh
}
section service service

echo
echo "bench-all: outputs in $OUT/"
if [ ${#failed[@]} -gt 0 ]; then
    echo "bench-all: FAILED sections: ${failed[*]}" >&2
    exit 1
fi

#!/usr/bin/env bash
# The cold pipeline on a larger machine, as one command: how B12 (`sample-cli bench pipeline`) scales from one
# core to all of them, the idle-core share while fetching, and the ratio to N x the one-thread anchor. Made for
# a machine lent for minutes that has neither Swift nor the image libraries: it runs the pack that
# ../shared/tools/pack-portable.sh builds here (.build-portable/pack.tar.xz, carried there with the tree).
#
#   ../shared/tools/pack-portable.sh                 # here, once: builds and packs sample-cli (.build-static/)
#   scripts/device-scaling.sh                        # there: CORES="1 N" for N = nproc, 3 rounds of 3000 images
#   ROUNDS=1 IMAGES=1000 scripts/device-scaling.sh   # a quicker look
#   PACK=DIR scripts/device-scaling.sh               # an unpacked pack already there
#
# Output goes to standard output and, when OUT names a folder (the lent machine's $OUT), to OUT/scaling.txt:
# each round's line, then the medians per core count (bench-pipeline-scaling.sh's table). On 16 cores the
# targets are at most 8% of the cores idle while fetching, and at least 0.7 x 16 x the one-thread anchor (the
# table's "/ (N x 1-thread anchor)" column). About 4 minutes on 16 cores with the defaults, most of them on one
# core.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PACK:-}" ]; then
    [ -f .build-portable/pack.tar.xz ] || { echo "no .build-portable/pack.tar.xz: run ../shared/tools/pack-portable.sh here first" >&2; exit 2; }
    PACK=$(mktemp -d)
    trap 'rm -rf "$PACK"' EXIT
    tar -C "$PACK" -xJf .build-portable/pack.tar.xz
fi
cores=$(nproc)
report=/dev/null
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && report=$OUT/scaling.txt; fi
{
    echo "machine: $cores cores, $(uname -srm)"
    CLI=$PACK/run CORES="1 $cores" ROUNDS=${ROUNDS:-3} IMAGES=${IMAGES:-3000} PAUSE=0 \
        scripts/bench-pipeline-scaling.sh 2>&1
} | tee "$report"

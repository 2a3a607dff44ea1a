#!/usr/bin/env bash
# AVIF and JPEG XL decode time against the reference libraries, in the same run, as ratios.
#
#   thread CPU  in process, file bytes already in memory, one thread, 8-bit RGBA out: ours
#               (`sample-cli bench decode`) against a C program doing what avifdec / djxl do before writing
#               their output (scripts/anchors/*_decode_bench.c: libavif's ReadMemory + YUVToRGB, libjxl's
#               decoder to RGBA). The verdict: the issue asks for a ratio of at most 1.15.
#   djxl        djxl's own timing (--num_reps, one thread, wall clock, its default float output), for reference.
#
#   scripts/bench-modern-formats.sh   # RUNS=3 runs, ITER=7 timed decodes inside each, CLI= another sample-cli
#
# Sources: the bundled 1000x872 Hubble photo, and the corpus's 4096x2713 photo when ../shared/corpus exists;
# each is encoded once with avifenc (speed 8) and cjxl (distance 1, pixels, not JPEG recompression) into
# .build-bench/modern/. Does not build sample-cli: run `swift build -c release --product sample-cli` first.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
ITER=${ITER:-7}
CLI=${CLI:-.build/release/sample-cli}
WORK=.build-bench/modern
mkdir -p "$WORK"

[ -x "$CLI" ] || { echo "bench: $CLI not found (swift build -c release --product sample-cli, or set CLI=)" >&2; exit 1; }
for tool in avifenc cjxl djxl cc; do
    command -v "$tool" >/dev/null || { echo "bench: $tool missing (scripts/install-system-deps.sh)" >&2; exit 1; }
done
cc -O2 -o "$WORK/avif_decode_bench" scripts/anchors/avif_decode_bench.c -lavif
cc -O2 -o "$WORK/jxl_decode_bench" scripts/anchors/jxl_decode_bench.c -ljxl

sources=(SampleCLI/Images/skimage-hubble_deep_field.jpg)
[ -f ../shared/corpus/photos/fresco-animal_a_xxl.jpg ] && sources+=(../shared/corpus/photos/fresco-animal_a_xxl.jpg)
files=()
for source in "${sources[@]}"; do
    name=$(basename "${source%.*}")
    [ -s "$WORK/$name.avif" ] || avifenc -s 8 -j 2 "$source" "$WORK/$name.avif" >/dev/null
    [ -s "$WORK/$name.jxl" ] || cjxl --lossless_jpeg=0 "$source" "$WORK/$name.jxl" >/dev/null 2>&1
    files+=("$WORK/$name.avif" "$WORK/$name.jxl")
done

median_ms() { awk -F'median_ms=' 'NF > 1 {print $2; exit}'; }
printf '%-4s %-40s %12s %12s %7s %14s\n' run file ours_ms library_ms ratio djxl_own_ms
for run in $(seq 1 "$RUNS"); do
    for file in "${files[@]}"; do
        ours=$("$CLI" bench decode "$file" --iterations "$ITER" --target 0 | median_ms)
        case $file in
            *.avif) library=$("$WORK/avif_decode_bench" "$file" "$ITER" | median_ms); own=- ;;
            *.jxl)
                library=$("$WORK/jxl_decode_bench" "$file" "$ITER" | median_ms)
                # "W x H, geomean: X MP/s ..." -> milliseconds per decode.
                own=$(djxl "$file" --num_reps="$ITER" --num_threads=1 2>&1 |
                    awk '/MP\/s/ {for (i = 1; i <= NF; i++) if ($(i+1) == "MP/s") mps = $i;
                                  print sprintf("%.1f", $1 * $3 / mps / 1000); exit}')
                ;;
        esac
        ratio=$(awk -v a="$ours" -v b="$library" 'BEGIN {printf "%.2f", a / b}')
        printf '%-4s %-40s %12s %12s %7s %14s\n' "$run" "$(basename "$file")" "$ours" "$library" "$ratio" "$own"
    done
done

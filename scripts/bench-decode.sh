#!/usr/bin/env bash
# Decode benchmark (docs/benchmarks.md, B5–B10): our decoders against libjpeg-turbo, libpng and giflib
# measured in the same run on the same machine, printed as ratios. Thread CPU time, medians over RUNS runs.
#
#   scripts/bench-decode.sh            # RUNS=3 by default; needs network access to PyPI once (Pillow, scikit-image)
#
# Work files go to .build-bench/ (ignored by git): a Python venv, the generated photos, the anchor binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
ANCHORS=${ANCHORS:-../shared/tools/anchors}
WORK=.build-bench
IMAGES=$WORK/images
mkdir -p "$WORK"

[ -d "$ANCHORS" ] || { echo "bench: anchors not found at $ANCHORS (set ANCHORS=)" >&2; exit 1; }
command -v cjpeg >/dev/null || { echo "bench: cjpeg missing (libjpeg-turbo-progs)" >&2; exit 1; }

if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c 'import PIL, skimage' 2>/dev/null; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q pillow scikit-image
fi
PY=$WORK/venv/bin/python
if [ ! -f "$IMAGES/coffee_4000x3000.q85.base.jpg" ]; then
    "$PY" "$ANCHORS/gen_images.py" "$IMAGES" >/dev/null
    sh "$ANCHORS/encode_jpegs.sh" "$IMAGES"
fi
for lib in jpeg png gif; do
    gcc -O2 -o "$WORK/${lib}dec_bench" "$ANCHORS/${lib}dec_bench.c" -l$lib
done
swift build -c release --product sample-cli >/dev/null
CLI=.build/release/sample-cli

# Resize anchor for B6/B7: Pillow LANCZOS 500x375 -> 256x192, thread CPU, median of 31.
cat > "$WORK/resize_anchor.py" <<'PYEOF'
import time, statistics
from PIL import Image
im = Image.new('RGB', (500, 375)); im.putdata([((x * 7) & 255, (y * 5) & 255, (x ^ y) & 255) for y in range(375) for x in range(500)])
ts = []
for _ in range(31):
    t0 = time.thread_time(); im.resize((256, 192), Image.LANCZOS); ts.append(time.thread_time() - t0)
print(f"resize500\tmedian_ms={statistics.median(ts) * 1e3:.3f}")
PYEOF

median_of_runs() { # KEY-REGEX FIELD CMD... : median over RUNS runs of FIELD on lines matching KEY-REGEX
    local key=$1 field=$2; shift 2
    for _ in $(seq "$RUNS"); do "$@" | grep -E "$key" | sed -E "s/.*$field=([0-9.]+).*/\1/" | head -1; done |
        sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

resize=$(median_of_runs resize500 median_ms "$PY" "$WORK/resize_anchor.py")
printf "%-44s %10s %10s %7s %7s\n" "workload" "ours ms" "anchor ms" "ratio" "target"
row() { printf "%-44s %10.2f %10.2f %7s %7s\n" "$1" "$2" "$3" "$(ratio "$2" "$3")" "$4"; }

for name in coffee_4000x3000 coffee_1920x1080; do
    for kind in base prog; do
        f=$IMAGES/$name.q85.$kind.jpg
        ours_full=$(median_of_runs $'\tfull\t' median_ms "$CLI" bench decode "$f" --iterations 7 --target 0)
        anchor_full=$(median_of_runs 'accurate.scale=1/1' median_ms "$WORK/jpegdec_bench" "$f" 7)
        row "$name $kind JPEG full decode" "$ours_full" "$anchor_full" "<=1.10"
        ours_256=$(median_of_runs 'fit256' median_ms "$CLI" bench decode "$f" --iterations 7 --target 256)
        # The largest DCT reduction still covering the 256 px fit: 1/8 (500x375) for 4000x3000, 1/4 (480x270) for 1920x1080.
        denom=8; [ "$name" = coffee_1920x1080 ] && denom=4
        anchor_scaled=$(median_of_runs "accurate.scale=1/$denom" median_ms "$WORK/jpegdec_bench" "$f" 7)
        anchor_256=$(awk -v a="$anchor_scaled" -v b="$resize" 'BEGIN {print a + b}')
        row "$name $kind JPEG decode at 256 px" "$ours_256" "$anchor_256" "<=1.20"
    done
done
# B9: progressive loading. The first preview (10% of the bytes, decoded at 1/8 for a 500 px target) against
# libjpeg decoding that same truncated prefix at 1/8; previews plus the final image against one full decode.
f=$IMAGES/coffee_4000x3000.q85.prog.jpg
IPK_WRITE_PREFIX=$WORK/prog-prefix.jpg "$CLI" bench progressive "$f" --iterations 1 >/dev/null
row "coffee_4000x3000 prog first preview (10%)" \
    "$(median_of_runs first_preview median_ms "$CLI" bench progressive "$f")" \
    "$(median_of_runs 'accurate.scale=1/8' median_ms sh -c "'$WORK/jpegdec_bench' '$WORK/prog-prefix.jpg' 7 2>/dev/null")" "<=1.20"
row "coffee_4000x3000 prog <=4 previews + final" \
    "$(median_of_runs $'\tall\t' median_ms "$CLI" bench progressive "$f")" \
    "$(median_of_runs 'accurate.scale=1/1' median_ms "$WORK/jpegdec_bench" "$f" 7)" "<=2.00"

f=$IMAGES/coffee_1920x1080.png
row "coffee_1920x1080 PNG full decode" \
    "$(median_of_runs $'\tfull\t' median_ms "$CLI" bench decode "$f" --iterations 5 --target 0)" \
    "$(median_of_runs libpng median_ms "$WORK/pngdec_bench" "$f" 5)" "<=1.15"
f=$IMAGES/coffee_1920x1080.gif
row "coffee_1920x1080 GIF first frame" \
    "$(median_of_runs $'\tfull\t' median_ms "$CLI" bench decode "$f" --iterations 7 --target 0)" \
    "$(median_of_runs giflib median_ms "$WORK/gifdec_bench" "$f" 7)" "<=1.15"
echo "resize anchor (Pillow LANCZOS 500x375->256x192): $resize ms; thread CPU, median of $RUNS runs each"

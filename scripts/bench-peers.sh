#!/usr/bin/env bash
# Thumbnail benchmark against peers: the time to make a 256 px thumbnail (fit in 256x256) of a JPEG with our
# decoder and with Pillow, libvips and djpeg, side by side in the same run on the same machine, printed as ratios
# to ours. A figure of ours means little alone (docs/benchmarks.md, B6 and B7, holds the decode targets).
#
# Two views, because they answer different questions:
#   thread CPU  in process, file bytes already in memory: the fair decode + resize comparison. Ours and Pillow
#               both do a libjpeg-turbo DCT-scaled decode then a Lanczos resize. Barely moved by other load.
#   wall        one process per thumbnail, file in -> file out: what a caller of each tool waits for. Includes
#               process start and the output encode, so each tool's start-up alone is printed beside it.
#
#   scripts/bench-peers.sh    # RUNS=5 processes per figure, ITER=7 timed thumbnails inside each in-process run,
#                             # PROG=0 skips the progressive files, CLI= another sample-cli binary
#
# Does not build (bench-decode.sh does): run `swift build -c release --product sample-cli` first. A peer that is
# not installed prints "not installed" and the rest still runs. Work files go to .build-bench/ (ignored by git),
# shared with bench-decode.sh: the venv (Pillow, scikit-image; needs PyPI once) and the generated photos.
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME and awk must print '.' as the decimal point
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
ITER=${ITER:-7}
PROG=${PROG:-1}
CLI=${CLI:-.build/release/sample-cli}
ANCHORS=${ANCHORS:-../shared/tools/anchors}
WORK=.build-bench
IMAGES=$WORK/images
OUT=$WORK/peers-out # thumbnails written by the wall-time runs (kept, to look at)
mkdir -p "$WORK" "$OUT"

[ -x "$CLI" ] || { echo "bench: $CLI not found (swift build -c release --product sample-cli, or set CLI=)" >&2; exit 1; }
[ -d "$ANCHORS" ] || { echo "bench: anchors not found at $ANCHORS (set ANCHORS=)" >&2; exit 1; }

# Same venv and photos as bench-decode.sh.
if [ ! -x "$WORK/venv/bin/python" ] || ! "$WORK/venv/bin/python" -c 'import PIL, skimage' 2>/dev/null; then
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q pillow scikit-image
fi
PY=$WORK/venv/bin/python
if [ ! -f "$IMAGES/coffee_4000x3000.q85.base.jpg" ]; then
    command -v cjpeg >/dev/null || { echo "bench: cjpeg missing (libjpeg-turbo-progs)" >&2; exit 1; }
    "$PY" "$ANCHORS/gen_images.py" "$IMAGES" >/dev/null
    sh "$ANCHORS/encode_jpegs.sh" "$IMAGES"
fi

# Pillow, both views. The explicit draft() pins the DCT scale to the largest one still >= 256 px (1/8 for
# 4000x3000, 1/4 for 1920x1080), which is what our decoder picks; thumbnail() would otherwise draft for 512 px
# (reducing_gap=2) and resize with BICUBIC.
SNIP=$WORK/peers_pillow.py
cat > "$SNIP" <<'PYEOF'
import io, sys, time, statistics
from PIL import Image

def thumbnail(source):
    im = Image.open(source)
    im.draft('RGB', (256, 256))
    im.thumbnail((256, 256), Image.LANCZOS)
    return im

if sys.argv[1] == 'cpu':   # cpu FILE N: like `sample-cli bench decode`, one warm-up then the median of N
    data = open(sys.argv[2], 'rb').read()
    size = thumbnail(io.BytesIO(data)).size
    ts = []
    for _ in range(int(sys.argv[3])):
        source = io.BytesIO(data)
        t0 = time.thread_time(); thumbnail(source); ts.append(time.thread_time() - t0)
    print(f"pillow\tout={size[0]}x{size[1]}\tmedian_ms={statistics.median(ts) * 1e3:.3f}")
else:                      # save IN OUT: one thumbnail, file to PNG (the same output format as ours)
    thumbnail(sys.argv[2]).save(sys.argv[3])
PYEOF

has() { # PEER: is it installed?
    case $1 in
        pillow) "$PY" -c 'import PIL.Image' 2>/dev/null ;;
        vips | vipspng) command -v vips >/dev/null ;;
        djpeg) command -v djpeg >/dev/null ;;
        *) true ;;
    esac
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
field() { sed -nE "s/.*$1=([0-9x.]+).*/\1/p" | head -1; } # KEY: value of KEY=... in the input

# In-process samples: each call is one process and prints its median thread-CPU ms over ITER thumbnails.
cpu_ours() { "$CLI" bench decode "$1" --iterations "$ITER" --target 256 | grep $'\tfit256\t' | field median_ms; }
cpu_pillow() { "$PY" "$SNIP" cpu "$1" "$ITER" | field median_ms; }

# Wall samples. EPOCHREALTIME (bash 5) reads the clock without forking, so only the tool's own process is inside
# the interval; `date +%s%N` is the fallback for older shells.
clock_us() { if [ -n "${EPOCHREALTIME:-}" ]; then REPLY=${EPOCHREALTIME/[.,]/}; else REPLY=$(($(date +%s%N) / 1000)); fi; }
wall_once() { # ARRAY-NAME: run the command held in that array once, print its wall ms ("fail" if it failed)
    local -n cmd=$1
    local t0
    clock_us; t0=$REPLY
    "${cmd[@]}" >/dev/null 2>&1 || { echo fail; return; }
    clock_us; awk -v d=$((REPLY - t0)) 'BEGIN {printf "%.3f\n", d / 1000}'
}
# ARRAY-NAME...: median wall ms of each command, printed one per line in order. hyperfine when installed (its
# own warm-up and median; -N runs the command without a shell); otherwise a loop that interleaves the commands
# run by run, so a change in the machine's load (other builds) hits every tool alike.
wall_medians() {
    local name r json
    if command -v hyperfine >/dev/null; then
        json=$WORK/peers-hyperfine.json
        for name in "$@"; do
            local -n cmd=$name
            hyperfine -N --style none --warmup 1 --runs "$RUNS" --export-json "$json" "${cmd[*]@Q}" >/dev/null 2>&1 &&
                "$PY" -c 'import json, sys; print("%.3f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1e3))' "$json" ||
                echo fail
            unset -n cmd
        done
        return
    fi
    declare -A samples=()
    for name in "$@"; do wall_once "$name" >/dev/null; done # warm-up: page cache, dynamic loader, bytecode caches
    for r in $(seq "$RUNS"); do
        for name in "$@"; do samples[$name]+="$(wall_once "$name") "; done
    done
    for name in "$@"; do
        if [[ ${samples[$name]} == *fail* ]]; then echo fail; else tr ' ' '\n' <<<"${samples[$name]}" | grep . | median; fi
    done
}

# The table. Ratio = tool ms / ours ms (above 1: ours is faster).
row() { # WORKLOAD TOOL MS OURS-MS [START-MS]
    local ms=$3 r=-
    [[ $ms =~ ^[0-9.]+$ ]] && r=$(ratio "$ms" "$4") && ms=$(printf "%.2f" "$ms")
    local start=${5:-}
    [[ $start =~ ^[0-9.]+$ ]] && start=$(printf "%.2f" "$start")
    printf "%-22s %-64s %13s %7s %9s\n" "$1" "$2" "$ms" "$r" "$start"
}
header() {
    printf "\n%s\n" "$1"
    printf "%-22s %-64s %13s %7s %9s\n" "workload" "tool" "ms (median)" "vs ours" "${2:-}"
}

files=(coffee_4000x3000.q85.base.jpg coffee_1920x1080.q85.base.jpg)
[ "$PROG" = 0 ] || files+=(coffee_4000x3000.q85.prog.jpg coffee_1920x1080.q85.prog.jpg)
pillow_version=$("$PY" -c 'import PIL; print(PIL.__version__)' 2>/dev/null || echo "?")
vips_version=$(vips --version 2>/dev/null || echo "vips ?")
echo "Thumbnail fit in 256x256 from a q85 4:2:0 JPEG; ratio = tool / ours. $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)."

# 1. Thread CPU, in process. Each process: one warm-up then the median of ITER thumbnails; figure = median over
#    RUNS processes (as bench-decode.sh).
header "1. thread CPU in process, bytes in memory: median over RUNS=$RUNS processes of the median of ITER=$ITER thumbnails"
for file in "${files[@]}"; do
    f=$IMAGES/$file
    workload=${file%.jpg}
    workload=${workload/.q85./ }
    outs=$("$CLI" bench decode "$f" --iterations 1 --target 256 | grep $'\tfit256\t' | field out)
    declare -A cpu=([ours]="" [pillow]="")
    for r in $(seq "$RUNS"); do # interleaved, for the same reason as wall_medians
        cpu[ours]+="$(cpu_ours "$f") "
        has pillow && cpu[pillow]+="$(cpu_pillow "$f") "
    done
    ours=$(tr ' ' '\n' <<<"${cpu[ours]}" | grep . | median)
    row "$workload" "ours (sample-cli bench decode, -> $outs)" "$ours" "$ours"
    if has pillow; then
        outp=$("$PY" "$SNIP" cpu "$f" 1 | field out)
        row "$workload" "Pillow $pillow_version open+draft+thumbnail LANCZOS (-> $outp RGB)" \
            "$(tr ' ' '\n' <<<"${cpu[pillow]}" | grep . | median)" "$ours"
    else
        row "$workload" "Pillow open+draft+thumbnail LANCZOS" "not installed" "$ours"
    fi
done

# 2. Wall time, one process per thumbnail. First what each tool costs doing nothing, to subtract.
start_ours=("$CLI" --help)
start_pillow=("$PY" -c 'import PIL.Image') # interpreter + Pillow import: what the thumbnail process pays first
start_python=("$PY" -c pass)
start_vips=(vips --version)
start_djpeg=(djpeg -version)
start_names=(start_ours start_pillow start_python)
has vips && start_names+=(start_vips)
has djpeg && start_names+=(start_djpeg)
declare -A start=()
i=0
while read -r ms; do start[${start_names[i]#start_}]=$ms; i=$((i + 1)); done < <(wall_medians "${start_names[@]}")
start[vipspng]=${start[vips]:-}

timing="bash loop with interleaved tools after 1 warm-up round"
command -v hyperfine >/dev/null && timing="hyperfine --warmup 1"
header "2. wall, one process per thumbnail, file in -> file out: median of RUNS=$RUNS runs ($timing)" "start ms"
for file in "${files[@]}"; do
    f=$IMAGES/$file
    workload=${file%.jpg}
    workload=${workload/.q85./ }
    # djpeg can only DCT-scale: the largest M/8 still covering 256 px, like our decoder and Pillow's draft().
    denom=8
    [[ $file == coffee_1920x1080.* ]] && denom=4
    rm -f "$OUT"/*
    wall_ours=("$CLI" decode "$f" --target 256x256 --out "$OUT/ours.png")
    wall_pillow=("$PY" "$SNIP" save "$f" "$OUT/pillow.png")
    wall_vips=(vips thumbnail "$f" "$OUT/vips.jpg" 256)
    wall_vipspng=(vips thumbnail "$f" "$OUT/vips.png" 256)
    wall_djpeg=(djpeg -scale "1/$denom" "$f")
    tools=(ours)
    for t in pillow vips vipspng djpeg; do has $t && tools+=("$t"); done
    declare -A wall=()
    i=0
    while read -r ms; do wall[${tools[i]}]=$ms; i=$((i + 1)); done < <(wall_medians "${tools[@]/#/wall_}")
    # Output sizes, read back from the files each tool wrote (djpeg's goes to /dev/null: its size is computed).
    read -r dims_ours dims_pillow dims_vips dims_vipspng < <("$PY" -c '
import os, sys
from PIL import Image
print(*[("%dx%d" % Image.open(p).size) if os.path.exists(p) else "-" for p in sys.argv[1:]])' \
        "$OUT/ours.png" "$OUT/pillow.png" "$OUT/vips.jpg" "$OUT/vips.png")
    read -r w h < <("$PY" -c 'import sys; from PIL import Image; print(*Image.open(sys.argv[1]).size)' "$f")
    dims_djpeg="$(((w + denom - 1) / denom))x$(((h + denom - 1) / denom))"
    declare -A label=(
        [ours]="ours: sample-cli decode --target 256x256 -> PNG $dims_ours"
        [pillow]="Pillow $pillow_version: python open+draft+thumbnail -> PNG $dims_pillow"
        [vips]="$vips_version: vips thumbnail -> JPEG $dims_vips"
        [vipspng]="$vips_version: vips thumbnail -> PNG $dims_vipspng"
        [djpeg]="djpeg -scale 1/$denom -> PPM $dims_djpeg (DCT scale only, no resize)"
    )
    for t in ours pillow vips vipspng djpeg; do
        if [ -n "${wall[$t]:-}" ]; then
            row "$workload" "${label[$t]}" "${wall[$t]}" "${wall[ours]}" "${start[$t]}"
        else
            row "$workload" "$t" "not installed" "${wall[ours]}"
        fi
    done
done
echo
echo "start ms = the same tool doing nothing (sample-cli --help / python -c 'import PIL.Image' / vips --version /"
echo "djpeg -version), median of RUNS=$RUNS; bare 'python -c pass': ${start[python]} ms. Subtract it from ms for the work alone."

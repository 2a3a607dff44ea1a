#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ and runs each for FUZZ_SECONDS (default 60), one after another.
#
#   scripts/fuzz.sh                      every target
#   scripts/fuzz.sh FuzzPNG FuzzGIF      some of them
#   FUZZ_SECONDS=600 scripts/fuzz.sh     longer runs
#   FUZZ_SKIP_BUILD=1 scripts/fuzz.sh …  reuse the last build (to run several targets side by side)
#
# Work lives in out/fuzz/<target>/ (outside git): corpus/ is what the fuzzer learnt and is kept between runs,
# seeds/ is rebuilt each run from ../shared/corpus (read there, never copied into git: some of its files come
# from other repositories) and from Fuzz/Seeds, crashes/ holds any input that crashed, timed out or ran out of
# memory, and log.txt the last run's output. Prints one line per target; exits 1 when any target found
# something, leaving the input in crashes/ (Fuzz/README.md says how to turn it into a regression test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
out=${FUZZ_OUT:-out/fuzz}
corpus=${IPK_CORPUS:-../shared/corpus}
scratch=.build-fuzz
max_seed_bytes=262144
targets=(FuzzJPEG FuzzPNG FuzzGIF FuzzWebP FuzzAVIF FuzzJXL FuzzEXIF FuzzIncremental FuzzHTTPValues FuzzThumborURL)
[ $# -gt 0 ] && targets=("$@")

# Address sanitizer as well as coverage: most of the decoding is C (ours, and the system libraries'
# allocations), where an overread is silent without it. -enable-testing: FuzzEXIF and FuzzHTTPValues call
# internal functions. Command-line flags, so that the library and its C are instrumented, not only the
# harnesses. SwiftPM's --sanitize=fuzzer tells it to leave `main` to libFuzzer; the -Xswiftc flag after it
# adds address: SwiftPM's own `--sanitize=fuzzer --sanitize=address` passes swiftc two -sanitize flags, of
# which only the last counts, and the Swift code then gets no coverage at all. lld, because gold warns about
# every ASan-instrumented link.
build=(swift build --package-path Fuzz --scratch-path "$scratch" -c release --sanitize=fuzzer
       -Xswiftc -sanitize=fuzzer,address -Xcc -fsanitize=fuzzer-no-link,address -Xswiftc -enable-testing
       -Xswiftc -use-ld=lld)
if [ -z "${FUZZ_SKIP_BUILD:-}" ]; then
    started=$SECONDS
    "${build[@]}"
    echo "fuzz build: $((SECONDS - started)) s"
fi
bin=$("${build[@]}" --show-bin-path)

if [ ! -f "$corpus/MANIFEST.md" ]; then
    echo "warning: no corpus at $corpus (set IPK_CORPUS); seeding from Fuzz/Seeds only" >&2
fi

# Copies corpus files with one of the given extensions, up to max_seed_bytes each, into $1.
seed_files() {
    local dir=$1; shift
    [ -d "$corpus" ] || return 0
    local pattern=() extension
    for extension in "$@"; do pattern+=(-o -iname "*.$extension"); done
    find "$corpus" -type f -size -"$((max_seed_bytes + 1))"c \( "${pattern[@]:1}" \) -print0 |
        while IFS= read -r -d '' file; do
            cp "$file" "$dir/$(echo "${file#"$corpus"/}" | tr / _)"
        done
}

# The APP1 EXIF payloads of the corpus JPEGs: what the EXIF reader is handed by the JPEG decoder.
seed_exif() {
    local dir=$1
    [ -d "$corpus" ] && command -v python3 > /dev/null || return 0
    python3 - "$corpus" "$dir" <<'PY'
import os, sys
corpus, out = sys.argv[1], sys.argv[2]
count = 0
for root, _, names in os.walk(corpus):
    for name in names:
        if not name.lower().endswith((".jpg", ".jpeg")):
            continue
        data = open(os.path.join(root, name), "rb").read()
        at = data.find(b"\xff\xe1")
        while at >= 0 and at + 4 <= len(data):
            length = int.from_bytes(data[at + 2:at + 4], "big")
            payload = data[at + 4:at + 2 + length]
            if payload.startswith(b"Exif\0\0"):
                open(os.path.join(out, f"{count:03d}-{name}.exif"), "wb").write(payload)
                count += 1
                break
            at = data.find(b"\xff\xe1", at + 2)
PY
}

# Small corpus files of every format, each behind two chunking headers (FuzzIncremental's input layout).
seed_incremental() {
    local dir=$1 staging
    staging=$(mktemp -d)
    max_seed_bytes=65536 seed_files "$staging" jpg jpeg png gif
    cp Fuzz/Seeds/WebP/*.webp "$staging/"
    for file in "$staging"/*; do
        { printf '\x00\x00\x01\x01'; cat "$file"; } > "$dir/a-$(basename "$file")"
        { printf '\x00\x5a\x13\x07'; cat "$file"; } > "$dir/b-$(basename "$file")"
    done
    rm -rf "$staging"
}

# AVIF and JPEG XL seeds made from the corpus's small PNGs with the libraries' own encoders (the corpus has
# no files of either format): stills, alpha, an image sequence, a progressive and a lossless JPEG XL.
seed_encoded() {
    local dir=$1 format=$2 staging
    staging=$(mktemp -d)
    max_seed_bytes=16384 seed_files "$staging" png
    local pngs=("$staging"/*.png) index=0
    [ -e "${pngs[0]}" ] || { rm -rf "$staging"; return 0; }
    for png in "${pngs[@]:0:12}"; do
        index=$((index + 1))
        case $format in
            # avifenc aborts on a few of the corpus's odd PNGs. In a subshell that does not end with it (so
            # bash cannot hand the subshell over to it) its abort is reported to /dev/null, and `|| true`
            # keeps `set -e` from ending the subshell, and then the script, on the failure.
            avif) (avifenc -s 10 "$png" "$dir/$index.avif" >/dev/null 2>&1 || true) 2>/dev/null ;;
            jxl) cjxl "$png" "$dir/$index.jxl" >/dev/null 2>&1 || true
                 cjxl -d 0 -p "$png" "$dir/$index-lossless.jxl" >/dev/null 2>&1 || true ;;
        esac
    done
    [ "$format" = avif ] && { avifenc -s 10 "${pngs[@]:0:1}" "${pngs[@]:0:1}" "$dir/sequence.avif" >/dev/null 2>&1 || true; }
    rm -rf "$staging"
}

status=0
printf '%-16s %12s %8s %10s %9s  %s\n' target executions seconds exec/s corpus result
for target in "${targets[@]}"; do
    work=$out/$target
    rm -rf "$work/seeds"
    mkdir -p "$work/corpus" "$work/seeds" "$work/crashes"
    dict=()
    case $target in
        FuzzJPEG) seed_files "$work/seeds" jpg jpeg; dict=(-dict=Fuzz/Dictionaries/jpeg.dict) ;;
        FuzzPNG) seed_files "$work/seeds" png; dict=(-dict=Fuzz/Dictionaries/png.dict) ;;
        FuzzGIF) seed_files "$work/seeds" gif; dict=(-dict=Fuzz/Dictionaries/gif.dict) ;;
        FuzzWebP) cp Fuzz/Seeds/WebP/*.webp "$work/seeds/"; dict=(-dict=Fuzz/Dictionaries/webp.dict) ;;
        FuzzAVIF) seed_encoded "$work/seeds" avif ;;
        FuzzJXL) seed_encoded "$work/seeds" jxl ;;
        FuzzEXIF) seed_exif "$work/seeds"; dict=(-dict=Fuzz/Dictionaries/exif.dict) ;;
        FuzzIncremental) seed_incremental "$work/seeds" ;;
        FuzzHTTPValues) cp Fuzz/Seeds/HTTPValues/* "$work/seeds/"; dict=(-dict=Fuzz/Dictionaries/http.dict) ;;
        FuzzThumborURL) cp Fuzz/Seeds/ThumborURL/* "$work/seeds/"; dict=(-dict=Fuzz/Dictionaries/thumbor.dict) ;;
        *) echo "unknown target $target" >&2; exit 2 ;;
    esac
    # rss_limit_mb: the decoders' own limits (FuzzDecoding.configuration) keep a legal input far below it.
    # timeout: a single input that takes 10 s under ASan is a hang worth keeping. detect_leaks=0: the Swift
    # runtime's metadata caches and libdispatch's threads read as leaks to LeakSanitizer. SWIFT_BACKTRACE: the
    # Swift runtime's own crash handler reads the stack in ways ASan reports as an error of its own, which
    # would bury the real one; libFuzzer and ASan print the stack instead.
    started=$SECONDS
    set +e
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} SWIFT_BACKTRACE=enable=no "$bin/$target" "$work/corpus" "$work/seeds" "${dict[@]}" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/crashes/" > "$work/log.txt" 2>&1
    rc=$?
    set -e
    ran=$((SECONDS - started))   # wall time: a run that finds something stops early
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log.txt" | tail -n 1)
    inputs=$(find "$work/corpus" -type f | wc -l)
    result=ok
    if [ "$rc" -ne 0 ]; then
        status=1
        artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log.txt" | tail -n 1)
        result="FOUND (exit $rc): ${artifact:-see $work/log.txt}"
    fi
    printf '%-16s %12s %8s %10s %9s  %s\n' "$target" "${executions:-?}" "$ran" "${rate:-?}" "$inputs" "$result"
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$target" "$ran" "${executions:-?}" "$result" >> "$out/runs.tsv"
done
[ "$status" -ne 0 ] && grep -h -B2 -A30 -m1 'ERROR: \|Fatal error\|deadly signal' "$out"/*/log.txt | head -n 60 >&2
exit "$status"

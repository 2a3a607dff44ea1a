#!/usr/bin/env bash
# Setup for the image-service benchmark: the Debian packages of the peers and the load client, a venv with
# thumbor and pyvips, and the 200 source photos (plus 20 ready thumbnails for the static peer). Idempotent: each
# step is skipped when its result is already there, so run.sh calls this every time.
#
#   scripts/bench-service/setup.sh      # WORK=out/bench-service by default
set -euo pipefail
cd "$(dirname "$0")/../.."
HERE=scripts/bench-service
WORK=${WORK:-out/bench-service}
mkdir -p "$WORK"

say() { echo "bench-service setup: $*" >&2; }

# 1. Debian packages. nginx + the image_filter module (libgd) and wrk are peers/load client; libvips-tools gives
# `vips`/`vipsthumbnail` for a look by hand; libcurl4-openssl-dev, libssl-dev and a compiler are what pycurl
# (thumbor's curl loader) needs when pip has to build it from source.
packages=(nginx libnginx-mod-http-image-filter wrk libvips-tools libcurl4-openssl-dev libssl-dev gcc)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || { say "not Debian/Ubuntu: install ${missing[*]} yourself"; exit 1; }
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # Where a service manager runs, the nginx package also starts a system nginx on port 80; the benchmark
    # never uses it (every nginx here is started by bench.py with a config of its own).
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The venv: thumbor 7.8 (Pillow engine, tornado, pycurl) and pyvips with its own libvips (pyvips-binary), so
# the pyvips peer and the quality reference do not depend on Debian's older libvips 8.14.
VENV=$WORK/venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import thumbor, pyvips, pycurl' 2>/dev/null; then
    say "venv with thumbor 7.8.x, pyvips, pyvips-binary (PyPI)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q 'thumbor>=7.8,<7.9' pycurl pyvips pyvips-binary
fi

# 3. 200 distinct 1920x1080 q85 baseline JPEGs and the 20 ready thumbnails of the first 20.
if [ ! -f "$WORK/images/.done" ] || [ ! -f "$WORK/thumbs/.done" ]; then
    say "generating source photos and thumbnails"
    "$VENV/bin/python" "$HERE/make_images.py" --corpus "${CORPUS:-../shared/corpus}/photos" \
        --out "$WORK/images" --thumbs "$WORK/thumbs"
fi

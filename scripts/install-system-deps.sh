#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages ImagePipelineKit links against. Idempotent: does nothing when every
# package is already present. Runs apt-get as root, through sudo otherwise; elsewhere it prints the list.
set -euo pipefail

# libjpeg-turbo's -dev package is named differently on Debian and Ubuntu; pick the one apt knows.
jpeg_dev=libjpeg62-turbo-dev
packages=(libpng-dev libgif-dev libexif-dev libwebp-dev libavif-dev libjxl-dev libsqlite3-dev pkg-config)
# Tools the tests and `make bench` use to build references and anchors (djpeg, cjpeg, avifenc/avifdec,
# cjxl/djxl; gcc is already there).
packages+=(libjpeg-turbo-progs libavif-bin libjxl-tools)
# The fleet tier's engine: the tests and `sample-cli fleet` start private redis-server processes.
packages+=(redis-server)
# `make cli` links the Swift runtime statically, and with it FoundationNetworking, which names libcurl.
packages+=(libcurl4-openssl-dev)
# A real browser for the image service's demo-page test (headless Chromium).
packages+=(chromium)

missing=()
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
if ! installed "$jpeg_dev" && ! installed libjpeg-turbo8-dev; then missing+=("$jpeg_dev"); fi
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: not a Debian/Ubuntu system; install these (or your distribution's equivalents):" >&2
    echo "  libjpeg-turbo (dev), libpng (dev), giflib (dev), libexif (dev), libwebp (dev), libavif (dev),"
    echo "  libjxl (dev), SQLite 3 (dev), libcurl (dev), pkg-config, redis-server" >&2
    exit 1
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# Ubuntu calls the libjpeg-turbo headers libjpeg-turbo8-dev.
if [[ " ${missing[*]} " == *" $jpeg_dev "* ]] && ! apt-cache show "$jpeg_dev" >/dev/null 2>&1; then
    missing=("${missing[@]/$jpeg_dev/libjpeg-turbo8-dev}")
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-system-deps: done"

#!/usr/bin/env bash
# Fetch benchmark (docs/benchmarks.md, B11): each downloader fetching a 200 KiB image from the in-process
# loopback origin, against wrk on the same server and URL in the same run, printed as ratios.
#
#   scripts/bench-fetch.sh                                  # both downloaders, concurrency 1 and 16, 5 s each
#   scripts/bench-fetch.sh --downloader httpclient --seconds 10
#
# Extra arguments go to `sample-cli bench fetch` (see its --help). Installs wrk with apt-get when missing
# (as root, or through sudo). SCRATCH= picks the build directory (default .build); the machine's other
# builds hold .build's lock, so pass your own when sharing it.
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}

if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null; then
        SUDO="sudo"
    else
        SUDO="none"
    fi
    if [ "$SUDO" = none ]; then
        echo "bench-fetch: wrk is not installed and neither root nor sudo is available: absolute numbers only" >&2
    else
        echo "bench-fetch: wrk is missing; running: ${SUDO:+$SUDO }apt-get install -y wrk" >&2
        if ! ${SUDO:+$SUDO} apt-get install -y wrk >&2; then
            echo "bench-fetch: trying again after: ${SUDO:+$SUDO }apt-get update" >&2
            ${SUDO:+$SUDO} apt-get update >&2 && ${SUDO:+$SUDO} apt-get install -y wrk >&2 ||
                echo "bench-fetch: could not install wrk: absolute numbers only" >&2
        fi
    fi
fi

echo "bench-fetch: swift build -c release --scratch-path $SCRATCH --product sample-cli" >&2
swift build -c release --scratch-path "$SCRATCH" --product sample-cli >&2
CLI=$SCRATCH/release/sample-cli

echo "bench-fetch: $CLI bench fetch $*" >&2
exec "$CLI" bench fetch "$@"

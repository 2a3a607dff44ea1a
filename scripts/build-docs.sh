#!/usr/bin/env bash
# Builds the DocC catalog of ImagePipelineKit with the toolchain's `docc`, treating every warning (a broken
# symbol link, an undocumented parameter, an ambiguous article name) as an error.
#
# The library is compiled in its own scratch path with symbol graphs turned on (about two minutes on two
# cores; the other build directories are left alone), then `docc convert` renders the catalog. Output: a
# documentation archive in out/docs/ImagePipelineKit.doccarchive (open its index.html through a web server, or
# use `docc preview`).
set -euo pipefail
cd "$(dirname "$0")/.."

SYMBOLS=$(mktemp -d)
trap 'rm -rf "$SYMBOLS"' EXIT
OUT=${OUT:-out/docs/ImagePipelineKit.doccarchive}

swift build -c release --target ImagePipelineKit --scratch-path .build-docs \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$SYMBOLS/all"
# Only the library's own graphs (its dependencies' would add their symbols to the catalog).
mkdir -p "$SYMBOLS/ours"
cp "$SYMBOLS"/all/ImagePipelineKit*.symbols.json "$SYMBOLS/ours/"

rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
docc convert Sources/ImagePipelineKit/ImagePipelineKit.docc \
    --additional-symbol-graph-dir "$SYMBOLS/ours" \
    --fallback-display-name ImagePipelineKit --fallback-bundle-identifier org.imagepipelinekit.ImagePipelineKit \
    --output-path "$OUT" --warnings-as-errors
echo "build-docs: $OUT"

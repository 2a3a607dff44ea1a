#!/usr/bin/env bash
# pack-perf.sh: pack this machine's `perf`, every shared library it needs and the dynamic loader into
# .build-portable/perf.tar.xz, so that a scheduler trace (scripts/idle-cores.py) can be taken on a larger
# machine that has no `perf` installed. Beside ../shared/tools/pack-portable.sh, which packs `sample-cli`.
# There:  P=/tmp/perf; mkdir -p $P && tar -C $P -xJf .build-portable/perf.tar.xz
#          $P/perf record -a -e sched:sched_switch ...   (docs/benchmarks.md, "Profiling", has the whole recipe)
# Tracepoints need the kernel's tracefs (the packed `perf` mounts it when missing, where allowed); a kernel
# that does not expose them makes `perf record` fail with a clear message, and nothing else is affected.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
perf=$(readlink -f "$(command -v perf)")
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib"
cp "$perf" "$stage/lib/perf.bin"
ldd "$perf" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r l; do cp -L "$l" "$stage/lib/"; done
loader=$(basename "$(ldd "$perf" | awk '$1 ~ /ld-linux/ {print $1}')")
cat > "$stage/perf" <<RUN
#!/usr/bin/env bash
here=\$(cd "\$(dirname "\$0")" && pwd)
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
exec "\$here/lib/$loader" --library-path "\$here/lib" "\$here/lib/perf.bin" "\$@"
RUN
chmod +x "$stage/perf"
mkdir -p .build-portable
tar -C "$stage" -cf - . | xz -T2 -6 > .build-portable/perf.tar.xz
ls -la .build-portable/perf.tar.xz

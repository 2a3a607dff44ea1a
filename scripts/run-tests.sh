#!/usr/bin/env bash
# Runs the whole test suite (Swift Testing; this package has no XCTest cases) from the build `make test`
# made: release with testing enabled, in .build-test. A debug SwiftNIO is slow enough that, on a 2-core
# machine, the loopback servers of many parallel tests saturate their event loops and time-sensitive tests
# fail for no fault of the code under test.
#
# Four phases, each parallel inside: the codec and cache tests (CPU-heavy) first; then the tests that run
# sample-cli processes against hostile origins (decode bombs and endless bodies keep both cores busy); then the
# network tests (timing-sensitive); last the image service's (renders, its processes and a headless browser),
# so that none starves another of CPU or of Swift concurrency's few threads.
#
# The full log goes to .build-test/test-output.txt; on failure the failed expectations are printed again at
# the end, so the last lines of a CI log say what failed, not only that something did.
set -uo pipefail
cd "$(dirname "$0")/.."
flags=(-c release -Xswiftc -enable-testing --scratch-path .build-test --disable-xctest --skip-build)
log=.build-test/test-output.txt
mkdir -p .build-test
: > "$log"
status=0
processes='HostileOriginProcessTests|SharedCacheDirectoryTests|FleetProcessTests'
phases=(
    "--filter ImagePipelineKitTests"
    "--filter $processes"
    "--filter ImagePipelineHTTPClientTests|ImageOriginServerTests|ImagePipelineRedisTests --skip $processes"
    "--filter ImagePipelineServiceTests"
)
for phase in "${phases[@]}"; do
    echo "== swift test $phase =="
    # Word-split on purpose: each phase is a filter and maybe a skip.
    # shellcheck disable=SC2086
    swift test "${flags[@]}" $phase "$@" 2>&1 | tee -a "$log"
    phase_status=${PIPESTATUS[0]}
    [ "$phase_status" -ne 0 ] && status=$phase_status
done
if [ "$status" -ne 0 ]; then
    echo
    echo "== failed tests and expectations (full log: $log) =="
    grep -a '✘' "$log" | grep -av '^✘ Suite ' | cut -c1-600 | head -n 80
fi
exit "$status"

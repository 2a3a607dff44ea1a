# The two commands a newcomer needs: `make demo` and `make test`. Both install the system libraries first.
SWIFT ?= swift
DEPS := scripts/install-system-deps.sh
DEMO_OUT ?= out/demo
# `make test`, `make demo` and `make serve` share one release build with testing enabled (in .build-test), so
# whichever runs second builds only what it adds. `make bench` and `make cli` build without it (.build,
# .build-static): benchmarks measure the code as a user's release build compiles it.
SHARED_BUILD := -c release -Xswiftc -enable-testing --scratch-path .build-test

.PHONY: deps build cli test demo serve bench bench-cache stress-tsan fuzz docs clean

deps:
	@bash $(DEPS)

build: deps
	$(SWIFT) build

# sample-cli for scripts that run it once per file: the Swift runtime and Foundation linked into the binary
# (--static-swift-stdlib), so a process starts without loading and binding them (docs/benchmarks.md measures
# both builds). The binary is .build-static/release/sample-cli; its bundled images sit beside it.
cli: deps
	$(SWIFT) build -c release --product sample-cli --static-swift-stdlib --scratch-path .build-static
	@echo "built .build-static/release/sample-cli"

# Builds everything in release with testing enabled (the bad-input sweep runs the sample-cli binary built
# beside the tests) and runs every test; scripts/run-tests.sh says why release, and why in phases.
test: deps
	$(SWIFT) build $(SHARED_BUILD) --build-tests
	bash scripts/run-tests.sh

# The 2,000-fetch stress test, the fetch and coordinator tests under ThreadSanitizer (a debug build with TSan:
# about 10 minutes to build on two cores, so not part of `make test`).
# TSAN_VISIBLE_LOCKS: see Sources/PipelineLocking/Locked.swift (Synchronization.Mutex is invisible to TSan on Linux).
stress-tsan: deps
	$(SWIFT) build --build-tests --sanitize=thread -Xswiftc -DTSAN_VISIBLE_LOCKS --scratch-path .build-tsan
	$(SWIFT) test --skip-build --sanitize=thread -Xswiftc -DTSAN_VISIBLE_LOCKS --scratch-path .build-tsan --disable-xctest --no-parallel \
		--filter 'FetchStressTests|FetchOperationTests|DownloadCoordinatorTests|AsyncFetchTests|ImageViewFetchHelperTests|WaitingFetchesTests|RenditionTableTierTests|DecodeInterruptionTests|SharedDecodesTests|StoredImageWatchersTests|DelegateQueueDiagnosticsTests|ProcessingSlotsTests|FetchQueueTargetTests|DownloadFanOutTests|DecodeMemoryBudgetTests|WALCheckpointerTests|DiskCacheConcurrencyTests'

# Coverage-guided fuzzing (libFuzzer with AddressSanitizer) of every decoder, the incremental sessions and the
# downloaders' header parsing: each target for FUZZ_SECONDS, one after another; FUZZ_TARGETS picks some (e.g.
# FUZZ_TARGETS="FuzzPNG FuzzGIF"). Work and any crashing input in out/fuzz/; fails when a target finds
# something. Fuzz/README.md says how to replay a crash and keep it as a regression test.
FUZZ_SECONDS ?= 60
fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh $(FUZZ_TARGETS)

# The main job: a photo feed read a screen at a time on a phone-sized grid, against the embedded origin over a
# shared Wi-Fi link (report, viewport snapshot and timeline in $(DEMO_OUT)/), then --compare over a shared
# LTE link (Chrome's "Fast 4G"): conventional loading vs the pipeline, and baseline vs progressive JPEG.
demo: deps
	$(SWIFT) build $(SHARED_BUILD) --product sample-cli
	@mkdir -p $(DEMO_OUT)
	.build-test/release/sample-cli scroll --network wifi --script browse --seconds 12 --json-file $(DEMO_OUT)/scroll-wifi.json \
		--snapshot $(DEMO_OUT)/scroll-wifi.png --timeline $(DEMO_OUT)/scroll-wifi.svg
	.build-test/release/sample-cli scroll --network lte --script browse --seconds 20 --compare \
		--json-file $(DEMO_OUT)/scroll-compare.json

# The image service with its demo: the loopback origin serves the sample photos and http://127.0.0.1:8888/ shows a
# page of their thumbnails, each a thumbor URL rendered by the service (docs/image-service.md). Ctrl-C stops it.
serve: deps
	$(SWIFT) build $(SHARED_BUILD) --product image-service
	.build-test/release/image-service --demo --port 8888

# The DocC catalog, built with the toolchain's docc; any warning fails it. Output in out/docs/.
docs: deps
	bash scripts/build-docs.sh

# Every benchmark (B1-B14 and the peers Pillow, vips and djpeg), each against its anchor measured in the
# same run; outputs in out/bench/. scripts/bench-all.sh lists the sections (ONLY= runs some).
bench: deps
	bash scripts/bench-all.sh

bench-cache: deps
	$(SWIFT) build -c release --product sample-cli
	.build/release/sample-cli bench cache

clean:
	rm -rf .build out

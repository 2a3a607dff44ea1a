#!/usr/bin/env python3
"""What a cold fetch spends CPU on, per image: the pipeline against the hand-written fetch of the same run.

    swift build -c release --product sample-cli
    perf record -g -F 1999 -o cpu.data -- .build/release/sample-cli bench pipeline --images 1000
    perf script -i cpu.data -F comm,tid,time,ip,sym,dso | swift demangle --simplified > cpu.txt
    scripts/cpu-split.py cpu.txt 1000            # FREQ=1999 by default: the -F of the recording
    scripts/cpu-split.py cpu.txt 1000 disk       # and the heaviest code paths of one category

`bench pipeline` runs the hand-written fetch, pauses, runs the pipeline, pauses, runs the hand-written fetch
again, then the bare decodes. The samples are split into those stretches by time: the hand-written fetch's two
runs are the samples with `HandWrittenFetch` on the stack, split at the longest gap between them (the
pipeline); the pipeline's stretch lies in that gap (0.1 s in from each side), the bare decodes' from the first
sample with `directDecodeRate`. The hand-written column counts both of its runs, per image of one run. Each sample is put in one category by the
thread it ran on and the code on its stack, and each column gives microseconds of CPU per image (samples / FREQ
/ images).

With a third argument, the start of a category's name, it also lists where that category's samples lie in the
pipeline's stretch: each sample goes to the innermost frame of its stack in the project's own code (the code
the category's time was spent for), and the heaviest 20 are printed in microseconds per image.

Frame pointers are enough here (`-g`): Swift code keeps them, so the files stay small. libjpeg-turbo does not,
and its samples carry no caller; they are told apart by their library instead.
"""
import collections
import os
import re
import sys

from perf_stacks import read_stacks

HEADER = re.compile(r"^(.*?)\s+(\d+)\s+([\d.]+):")

# A sample goes to the category of the innermost frame on its stack that names one (a decode's scaling is
# scale, a memory cache store reached from a download's relay is the caches); the event loops go by their
# threads' names before that. The loopback origin serves from an event loop group of its own ("NIO-ELT-..."),
# the HTTP client runs on SwiftNIO's shared singleton group ("NIO-SGLTN-..."). C libraries compiled without
# frame pointers hide their callers, so the file system's kernel functions name the disk themselves.
THREADS = [
    ("origin (the loopback server)", "NIO-ELT"),
    ("HTTP client and its event loops", "NIO-SGLTN"),
]
CATEGORIES = [
    ("decode", ["libjpeg", "JPEGDecod", "jpeg_", "jsimd"]),
    ("scale", ["ipk_resample", "ipk_kernel", "Bitmap.resampled", "Bitmap.scaled"]),
    ("origin (the loopback server)", ["OriginHTTPHandler", "ImageOriginServer"]),
    ("disk: file, checksum, index", ["DiskCache", "CacheFileSystem", "ContentChecksum", "SQLite", "sqlite3",
                                     "HandWrittenFetch.writeNewFile", "ext4_", "recently_deleted",
                                     "find_inode_bit", "find_get_block", "renameat"]),
    ("HTTP client and its event loops", ["HTTPClient", "HopDelegate", "NIO"]),
    ("hand-written fetch: blocking GET", ["LoopbackHTTPConnection", "HandWrittenFetch"]),
    ("download sharing and relays", ["SharedDownload", "DownloadCoordinator", "DownloadDelivery", "QueueBacklog",
                                     "FetchDownloadClient", "WaitingFetches"]),
    ("memory and rendered caches", ["MemoryCache", "RenderedCache", "CachePool", "ImageTable", "Rendition"]),
    ("the fetch's own steps", ["FetchOperation", "ImagePipeline", "SharedDecodes", "SharedDelegateTurn",
                               "OperationQueue"]),
    # "^" matches the start of a symbol only: the kernel's block layer has functions named "..._dispatch_...".
    ("libdispatch: queues and wake-ups", ["libdispatch", "^_dispatch_", "^dispatch_"]),
]
OTHER = "other: kernel, allocator, runtime"
# The executable whose frames are the project's code (libraries it links statically included).
OWN_CODE = "sample-cli"


def category(thread, frames):
    for name, prefix in THREADS:
        if thread.startswith(prefix):
            return name
    for frame in frames:
        for name, words in CATEGORIES:
            if any(frame.startswith(word[1:]) if word.startswith("^") else word in frame for word in words):
                return name
    return OTHER


def times_of(samples, word):
    times = sorted(time for time, _, frames in samples if any(word in frame for frame in frames))
    if not times:
        sys.exit(f"no sample has {word} on its stack: is this a recording of `bench pipeline` with -g?")
    return times


def around_longest_gap(times):
    """The two runs of `times`, split where the longest gap between samples lies: (first's end, second's start)."""
    gap = max(range(1, len(times)), key=lambda index: times[index] - times[index - 1])
    return times[gap - 1], times[gap]


def category_named(wanted):
    """The category whose name starts with `wanted`."""
    names = list(dict.fromkeys([name for name, _ in CATEGORIES + THREADS] + [OTHER]))
    name = next((name for name in names if name.startswith(wanted)), None)
    if name is None:
        sys.exit(f"no category starts with {wanted!r}: {', '.join(names)}")
    return name


def print_paths(samples, name, per_image):
    """The heaviest code paths of category `name` among `samples`."""
    paths = collections.Counter()
    for _, thread, frames in samples:
        if category(thread, frames) == name:
            own = next((frame for frame in frames if OWN_CODE in frame and not frame.startswith("[")), frames[0])
            paths[own.split(" (")[0]] += 1
    print(f"\n{name}, in the pipeline: the innermost frame of the project's own code, microseconds per image")
    for path, count in paths.most_common(20):
        print(f"{per_image(count):8.1f}  {path[:100]}")


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    drilled = category_named(sys.argv[3]) if len(sys.argv) == 4 else None
    images, frequency = int(sys.argv[2]), float(os.environ.get("FREQ", "1999"))
    samples = read_stacks(sys.argv[1], HEADER)
    hand = times_of(samples, "HandWrittenFetch")
    first_end, second_start = around_longest_gap(hand)
    bare = times_of(samples, "directDecodeRate")
    stretches = {
        "bare decodes": [s for s in samples if bare[0] <= s[0] <= bare[-1]],
        "hand-written": [s for s in samples if hand[0] <= s[0] <= first_end or second_start <= s[0] <= hand[-1]],
        # The benchmark pauses 0.2 s on each side of the pipeline; the other runs' stragglers stay out.
        "pipeline": [s for s in samples if first_end + 0.1 < s[0] < second_start - 0.1],
    }
    counts = {name: collections.Counter(category(thread, frames) for _, thread, frames in group)
              for name, group in stretches.items()}
    per_image = lambda count: count / frequency / images * 1e6
    # The hand-written fetch fetched every image twice.
    counts["hand-written"] = collections.Counter({name: count / 2 for name, count in counts["hand-written"].items()})
    names = list(dict.fromkeys([name for name, _ in CATEGORIES] + [OTHER]))
    print(f"{'microseconds of CPU per image':36s} {'bare decodes':>13s} {'hand-written':>13s} {'pipeline':>9s} "
          f"{'pipeline - hand-written':>24s}")
    for name in names:
        hand, pipeline = counts["hand-written"][name], counts["pipeline"][name]
        print(f"{name:36s} {per_image(counts['bare decodes'][name]):13.0f} {per_image(hand):13.0f} "
              f"{per_image(pipeline):9.0f} {per_image(pipeline - hand):+24.0f}")
    totals = {name: sum(counter.values()) for name, counter in counts.items()}
    print(f"{'all':36s} {per_image(totals['bare decodes']):13.0f} {per_image(totals['hand-written']):13.0f} "
          f"{per_image(totals['pipeline']):9.0f} {per_image(totals['pipeline'] - totals['hand-written']):+24.0f}")
    if drilled:
        print_paths(stretches["pipeline"], drilled, per_image)


if __name__ == "__main__":
    main()

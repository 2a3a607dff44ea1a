#!/usr/bin/env python3
"""What a process's idle cores wait for, from a scheduler trace.

For every period of at least MIN_MS in which a core ran its idle task while the process was running, the
script looks at the process's threads: a thread whose last switch-out left it runnable (state R) was waiting
in another core's run queue while this core idled. It prints the idle time in those periods, the share of it
during which at least one of the process's threads waited so, and which threads (by name) waited.

    perf record -a -e sched:sched_switch -o sched.data -- .build/release/sample-cli bench pipeline
    perf script -i sched.data -F comm,tid,cpu,time,trace > sched.txt
    scripts/idle-cores.py sched.txt 'qos|NIO-|sample-cli'   # the second argument matches the process's threads

The periods counted are those in the longest stretch during which threads whose names match WINDOW (default:
the HTTP client's event loops, `NIO-SGLTN`) switched at least every 50 ms: `bench pipeline` while it fetches.
EVERY=1 prints each stretch of at least 0.2 s instead, in order: with WINDOW=NIO-ELT (the loopback origin's
event loops, busy during the hand-written fetch and then the pipeline's) for `--transport blocking`, which has
no HTTP client event loops; the lengths tell the two apart (the benchmark prints how long its pipeline took).
"""
import collections
import os
import re
import sys

MIN_MS = float(os.environ.get("MIN_MS", "0.3"))
WINDOW = os.environ.get("WINDOW", "NIO-SGLTN")
EVERY = os.environ.get("EVERY") == "1"
SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+): prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> "
                    r"next_comm=(.*?) next_pid=(\d+)")


def main(path, ours_pattern):
    ours = re.compile(ours_pattern)
    switches = []
    for line in open(path):
        match = SWITCH.search(line)
        if match:
            cpu, time, prev_comm, prev, state, next_comm, following = match.groups()
            switches.append((float(time), int(cpu), prev_comm, int(prev), state, next_comm, int(following)))
    marks = [s[0] for s in switches if WINDOW in s[2] or WINDOW in s[5]]
    if not marks:
        sys.exit(f"no thread named like {WINDOW!r} in the trace")
    stretches, first = [], marks[0]
    for before, after in zip(marks, marks[1:] + [float("inf")]):
        if after - before > 0.05:
            stretches.append((first, before))
            first = after
    if EVERY:
        for start, end in stretches:
            if end - start >= 0.2:
                report(switches, ours, start, end)
    else:
        report(switches, ours, *max(stretches, key=lambda stretch: stretch[1] - stretch[0]))


def report(switches, ours, start, end):
    """Prints the idle periods between start and end, and which of the process's threads waited during them."""
    state = {}       # thread id -> its last state: "run", or the state it was switched out in
    names = {}
    idle_since = {}  # core -> when it started idling
    idle_ms = waited_ms = 0.0
    waiting_threads = collections.Counter()
    by_count = collections.Counter()
    for time, cpu, prev_comm, prev, prev_state, next_comm, following in switches:
        if following == 0 and start <= time <= end:
            idle_since[cpu] = time
        elif prev == 0 and cpu in idle_since:
            length = (time - idle_since.pop(cpu)) * 1000
            if length >= MIN_MS:
                waiting = [t for t, s in state.items() if s == "R" and ours.search(names.get(t, ""))]
                idle_ms += length
                by_count[len(waiting)] += length
                if waiting:
                    waited_ms += length
                    for thread in waiting:
                        waiting_threads[re.sub(r"[-#\d]+$", "", names[thread])] += length / len(waiting)
        names[prev], names[following] = prev_comm, next_comm
        state[prev], state[following] = prev_state, "run"

    print(f"{(end - start):.3f} s traced on the cores; idle periods of {MIN_MS} ms or more: {idle_ms:.1f} ms")
    if idle_ms == 0:
        return
    print(f"with at least one of the process's threads runnable and waiting: {waited_ms:.1f} ms "
          f"({100 * waited_ms / idle_ms:.0f}%)")
    print("idle ms by the number of threads waiting:",
          ", ".join(f"{count}: {ms:.1f}" for count, ms in sorted(by_count.items())))
    print("idle ms by the threads that waited:",
          ", ".join(f"{name}: {ms:.1f}" for name, ms in waiting_threads.most_common(8)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

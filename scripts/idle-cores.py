#!/usr/bin/env python3
"""What a process's idle cores wait for, from a scheduler trace.

    perf record -a -e sched:sched_switch -e sched:sched_wakeup -e power:cpu_idle -o sched.data -- \\
        .build/release/sample-cli bench pipeline
    perf script -i sched.data -F comm,tid,cpu,time,event,trace > sched.txt
    scripts/idle-cores.py sched.txt 'qos|NIO-|sample-cli'   # the second argument matches the process's threads

Idle periods come from `power:cpu_idle` (a core entering and leaving its idle state), so they do not depend on
the switch out of the idle task being traced, which some virtual machines' kernels leave out. A thread of the
process is runnable from its wake-up (or from being preempted) until it is seen running again. Over the
stretch the script prints:
- how much of the cores' time was idle, against what the benchmark's own `cores:` line says;
- the idle core time that a runnable thread of the process could have used: at each moment, the smaller of the
  number of idle cores and the number of threads waiting for one. A large share means that the scheduler left
  work queued behind busy cores; a small one, that the process had no work ready (hand-offs between threads,
  waits for the network or a lock);
- how long the process's threads waited from their wake-up until they ran, and how much longer when no core
  was idle at the wake-up.

The stretch is the longest during which threads whose names match WINDOW (default: the HTTP client's event
loops, `NIO-SGLTN`) switched at least every 50 ms: `bench pipeline` while it fetches. EVERY=1 prints each
stretch of at least 0.2 s instead, in order: with WINDOW=NIO-ELT (the loopback origin's event loops, busy during
the hand-written fetch and then the pipeline's) for `--transport blocking`, which has no HTTP client event
loops; the lengths tell the two apart (the benchmark prints how long its pipeline took).
"""
import collections
import os
import re
import sys

WINDOW = os.environ.get("WINDOW", "NIO-SGLTN")
EVERY = os.environ.get("EVERY") == "1"
LINE = re.compile(r"^\s*(.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
WAKEUP = re.compile(r"comm=(.*?) pid=(\d+) .*target_cpu=(\d+)")
IDLE = re.compile(r"state=(\d+) cpu_id=(\d+)")
LEAVES_IDLE = 4294967295


def read(path):
    """The trace's events in order: (time, cpu, running thread, event name, fields of the event)."""
    events = []
    for line in open(path):
        match = LINE.match(line)
        if match:
            comm, tid, cpu, time, event, trace = match.groups()
            events.append((float(time), int(cpu), int(tid), comm, event.split(":")[-1], trace))
    return events


def main(path, ours_pattern):
    ours = re.compile(ours_pattern)
    events = read(path)
    marks = [e[0] for e in events if e[4] == "sched_switch" and WINDOW in e[5]]
    if not marks:
        sys.exit(f"no thread named like {WINDOW!r} in the trace")
    if not any(e[4] == "cpu_idle" for e in events):
        sys.exit("no power:cpu_idle events in the trace: record them too (see the header)")
    stretches, first = [], marks[0]
    for before, after in zip(marks, marks[1:] + [float("inf")]):
        if after - before > 0.05:
            stretches.append((first, before))
            first = after
    if EVERY:
        for start, end in stretches:
            if end - start >= 0.2:
                report(events, ours, start, end)
    else:
        report(events, ours, *max(stretches, key=lambda stretch: stretch[1] - stretch[0]))


def report(events, ours, start, end):
    """Sweeps the events between start and end, keeping which cores idle and which threads wait to run."""
    cores = sorted({e[1] for e in events})
    idle = set()
    waiting = {}            # thread -> when it became runnable
    woke_with_idle_core = {}  # thread -> whether a core was idle when it woke
    idle_time = usable = 0.0
    waits = {True: [], False: []}
    last = None
    for time, cpu, tid, comm, event, trace in events:
        if time > end:
            break
        if last is not None and time >= start:
            span = time - max(last, start)
            idle_time += span * len(idle)
            usable += span * min(len(idle), len(waiting))
        last = time

        def ran(thread):
            woke = waiting.pop(thread, None)
            if woke is not None and time >= start:
                waits[woke_with_idle_core.pop(thread)].append(time - woke)

        if tid and ours.search(comm):
            ran(tid)
        if event == "cpu_idle":
            state, core = map(int, IDLE.search(trace).groups())
            (idle.discard if state == LEAVES_IDLE else idle.add)(core)
        elif event == "sched_switch":
            prev_comm, prev, state, next_comm, following = SWITCH.search(trace).groups()
            if state.startswith("R") and ours.search(prev_comm):
                waiting[int(prev)] = time
                woke_with_idle_core[int(prev)] = bool(idle)
            if int(following) and ours.search(next_comm):
                ran(int(following))
        elif event == "sched_wakeup":
            name, thread, _ = WAKEUP.search(trace).groups()
            if ours.search(name) and int(thread) not in waiting:
                waiting[int(thread)] = time
                woke_with_idle_core[int(thread)] = bool(idle)

    core_time = (end - start) * len(cores)
    print(f"{end - start:.3f} s on {len(cores)} cores: idle {100 * idle_time / core_time:.1f}% of the cores' time")
    if idle_time:
        print(f"idle core time a waiting thread of the process could have used: {1000 * usable:.1f} ms of "
              f"{1000 * idle_time:.1f} ms ({100 * usable / idle_time:.0f}%)")
    for idle_core, label in ((True, "with a core idle"), (False, "with every core busy")):
        values = sorted(waits[idle_core])
        if values:
            def at(share): return 1e6 * values[min(len(values) - 1, int(share * len(values)))]
            print(f"wake-ups {label}: {len(values)}, waited until running: median {at(0.5):.0f} us, "
                  f"p90 {at(0.9):.0f} us, p99 {at(0.99):.0f} us, {1000 * sum(values):.1f} ms in all")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

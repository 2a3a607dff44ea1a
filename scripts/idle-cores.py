#!/usr/bin/env python3
"""What a process's idle cores wait for, from a scheduler trace.

    perf record -a -e sched:sched_switch -e sched:sched_wakeup -e power:cpu_idle -o sched.data -- \\
        .build/release/sample-cli bench pipeline
    perf script -i sched.data -F comm,tid,cpu,time,event,trace > sched.txt
    scripts/idle-cores.py sched.txt 'qos|NIO-|sample-cli'   # the second argument matches the process's threads

Idle periods come from `power:cpu_idle` (a core entering and leaving its idle state). Some virtual machines'
kernels record no event from the idle task on most cores (only core 0 on the machines measured here): those
cores are named and left out, since neither their idle periods nor a thread starting there from idle can be
seen. A thread of the process waits from a wake-up onto a traced core, or from being preempted on one, until
it is seen running. Over the stretch the script prints, for the traced cores:
- how much of their time was idle (compare the benchmark's own `cores:` line);
- when every core is traced, the idle core time that a waiting thread of the process could have used: at each
  moment, the smaller of the number of idle cores and the number of threads waiting for one;
- how many threads were woken onto them while idle, woken onto them while busy, and preempted on them, and how
  long each waited until it ran. Many long waits behind a busy core while other cores idle mean that the
  scheduler left work queued; few, that the process had no work ready (waits for the network or a lock).

The stretch is the longest during which threads whose names match WINDOW (default: the HTTP client's event
loops, `NIO-SGLTN`) switched at least every 50 ms: `bench pipeline` while it fetches. EVERY=1 prints each
stretch of at least 0.2 s instead, in order: with WINDOW=NIO-ELT (the loopback origin's event loops, busy during
the hand-written fetch and then the pipeline's) for `--transport blocking`, which has no HTTP client event
loops; the lengths tell the two apart (the benchmark prints how long its pipeline took).
"""
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
    traced = {e[1] for e in events if e[4] == "cpu_idle"}
    untraced = sorted({e[1] for e in events} - traced)
    if untraced:
        # Cores that went idle (a switch into the idle task) without one event from the idle task itself: the
        # kernel did not trace there, and their idle time cannot be read from this trace.
        print(f"cores {untraced}: no event from the idle task was recorded; left out of what follows")
    stretches, first = [], marks[0]
    for before, after in zip(marks, marks[1:] + [float("inf")]):
        if after - before > 0.05:
            stretches.append((first, before))
            first = after
    if EVERY:
        for start, end in stretches:
            if end - start >= 0.2:
                report(events, ours, traced, not untraced, start, end)
    else:
        report(events, ours, traced, not untraced, *max(stretches, key=lambda stretch: stretch[1] - stretch[0]))


def report(events, ours, cores, complete, start, end):
    """Sweeps the events between start and end, keeping which traced cores idle and which threads wait to run.

    A thread counts as waiting from a wake-up onto a traced core, or from being preempted on one, until it is
    seen running: on a core whose idle task is not traced, a thread that starts there from idle is seen only
    at its next event, so waits are measured on traced cores alone, and the idle time a waiting thread could
    have used only when every core is traced.
    """
    idle = set()
    waiting = {}          # thread -> (when it became runnable, how: a key of `waits`)
    idle_time = usable = 0.0
    waits = {"woken onto an idle core": [], "woken onto a busy core": [], "preempted": []}

    def ran(thread, time):
        woke = waiting.pop(thread, None)
        if woke is not None and woke[0] >= start:
            waits[woke[1]].append(time - woke[0])

    last = None
    for time, cpu, tid, comm, event, trace in events:
        if time > end:
            break
        if last is not None and time >= start:
            span = time - max(last, start)
            idle_time += span * len(idle)
            usable += span * min(len(idle), len(waiting))
        last = time
        if tid and ours.search(comm):
            ran(tid, time)
        if event == "cpu_idle":
            state, core = map(int, IDLE.search(trace).groups())
            if core in cores:
                (idle.discard if state == LEAVES_IDLE else idle.add)(core)
        elif event == "sched_switch":
            prev_comm, prev, state, next_comm, following = SWITCH.search(trace).groups()
            if state.startswith("R") and ours.search(prev_comm) and cpu in cores:
                waiting[int(prev)] = (time, "preempted")
            if int(following) and ours.search(next_comm):
                ran(int(following), time)
        elif event == "sched_wakeup":
            name, thread, target = WAKEUP.search(trace).groups()
            if ours.search(name) and int(target) in cores and int(thread) not in waiting:
                onto = "an idle core" if int(target) in idle else "a busy core"
                waiting[int(thread)] = (time, f"woken onto {onto}")

    core_time = (end - start) * len(cores)
    print(f"{end - start:.3f} s on {len(cores)} traced cores: idle {100 * idle_time / core_time:.1f}% of their time")
    if idle_time and complete:
        print(f"idle core time a waiting thread of the process could have used: {1000 * usable:.1f} ms of "
              f"{1000 * idle_time:.1f} ms ({100 * usable / idle_time:.0f}%)")
    for label, values in waits.items():
        values.sort()
        if values:
            def at(share): return 1e6 * values[min(len(values) - 1, int(share * len(values)))]
            print(f"{label}: {len(values)}, waited until running: median {at(0.5):.0f} us, "
                  f"p90 {at(0.9):.0f} us, p99 {at(0.99):.0f} us, {1000 * sum(values):.1f} ms in all")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

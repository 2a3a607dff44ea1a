#!/usr/bin/env python3
"""Which code wakes a process's threads, per image, from a trace of wake-ups with their call stacks.

    perf record -e sched:sched_wakeup --call-graph dwarf,16384 -o wake.data -- \\
        .build/release/sample-cli bench pipeline --images 400
    perf script -i wake.data -F comm,tid,time,trace,ip,sym | swift demangle --simplified > wake.txt
    scripts/wakeups.py wake.txt 400

Every wake-up of a sleeping thread is a hand-off between threads: a block sent to an idle queue, a socket write
that wakes the reader, a lock released to a waiter. Each is put down to the first frame on the waker's stack
that names the code which caused it (past libdispatch, the futex and socket calls, closures and thunks), and
counted per image over the longest burst of wake-ups (`bench pipeline` while it fetches: its bursts are
separated by pauses of at least 0.15 s; SEGMENT=n picks the n-th burst instead, counting from 0). A libdispatch
worker that wakes another because more work is queued is counted as such.
"""
import collections
import os
import re
import sys

from perf_stacks import read_stacks

HEADER = re.compile(r"^\s*(.*?)\s+(\d+)\s+([\d.]+):.*comm=(.*?) pid=")
# Frames that say how a thread was woken, not which code woke it.
MECHANISM = ("_dispatch", "dispatch_", "__new_sem", "futex", "pthread", "DispatchQueue", "thunk", "partial apply",
             "QueueBacklog", "__GI", "syscall", "start_thread", "clone", "$defer", "_MutexHandle", "withLock",
             "closure #", "(inlined)", "[unknown]")
KERNEL = re.compile(r"^(try_to_wake|ttwu|wake_up|wake_q|do_|futex_|__x64|entry_SYSCALL|ep_|__wake|pollwake|sock_|"
                    r"tcp|ip_|unix|eventfd_w|ksys|vfs|kick|net_|process_backlog|handle_softirqs|loopback|dev_|"
                    r"sch_|irq|asm_|sysvec|hrtimer|swake|rcu|call_timer|run_timer|tmigr|rt_mutex|mod_delayed|"
                    r"kblockd|zap_|finish_task|schedule|__)")


def bursts(events, gap=0.15):
    groups = [[]]
    for event in events:
        if groups[-1] and event[0] - groups[-1][-1][0] > gap:
            groups.append([])
        groups[-1].append(event)
    return groups


def cause(frames):
    user = [frame for frame in frames if not KERNEL.match(frame)]
    if "_dispatch_worker_thread" in user[:6] and any("poke" in frame for frame in user[:6]):
        return "libdispatch: a worker waking another for queued work"
    named = [frame for frame in user if not any(word in frame for word in MECHANISM)]
    if named:
        return " <- ".join(frame[:90] for frame in named[:2])
    return (user or frames or ["?"])[0][:60]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    images = int(sys.argv[2])
    groups = bursts(read_stacks(sys.argv[1], HEADER))
    chosen = groups[int(os.environ["SEGMENT"])] if "SEGMENT" in os.environ else max(groups, key=len)
    span = chosen[-1][0] - chosen[0][0]
    print(f"{len(chosen)} wake-ups in {span:.2f} s: {len(chosen) / images:.1f} per image")
    counts = collections.Counter(cause(frames) for _, _, frames in chosen)
    for what, count in counts.most_common(int(os.environ.get("TOP", "30"))):
        print(f"{count / images:6.2f}  {what}", flush=True)


if __name__ == "__main__":
    main()

"""Processes the benchmark starts: started with their output in files, remembered by PID in a pid file (so that
run.sh's exit trap can stop whatever a crash left behind), stopped as whole process trees, and measured
(resident memory of a tree, sampled from /proc while a load runs). Linux only; stdlib only."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def free_port():
    """A loopback port that was free a moment ago (bind to 0, read it, close)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _parents():
    """pid -> parent pid for every process (this kernel has no /proc/PID/task/TID/children)."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses; the fields after its last ')' do not.
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(name)] = int(fields[1])
    return parents


def tree(root):
    """root and all its descendants that are alive now."""
    parents = _parents()
    if root not in parents:
        return []
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def kill_tree(root, grace=5.0):
    """SIGTERM to root and every descendant (listed before any dies, since orphans move to init), then
    SIGKILL to whatever is still there after `grace` seconds."""
    pids = tree(root)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def _start_time(pid):
    """The process's start time in clock ticks since boot (stat field 22): with the PID, it names one process,
    so a PID reused by something else after ours ended is never signalled."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def stop_pidfile(pidfile):
    """Stops the process trees of every 'PID START NAME' line of pidfile whose process is still the same one
    (run.sh's exit trap: what a crashed or interrupted bench.py left running)."""
    try:
        with open(pidfile) as f:
            lines = [line.split() for line in f if line.strip()]
    except OSError:
        return
    for fields in lines:
        if len(fields) != 3 or not (fields[0].isdigit() and fields[1].isdigit()):
            continue
        pid, start, name = fields
        if _start_time(int(pid)) == int(start):
            print(f"bench-service: stopping leftover {name} (pid {pid})", file=sys.stderr)
            kill_tree(int(pid))
    os.remove(pidfile)


class Processes:
    """Every server of one run. pidfile holds one 'PID START NAME' line per server still running; stop()
    removes its line, stop_all() stops them all, and run.sh's trap stops whatever is left in it."""

    def __init__(self, logdir, pidfile):
        self.logdir = logdir
        self.pidfile = pidfile
        self.started = {}  # name -> Popen
        os.makedirs(logdir, exist_ok=True)

    def start(self, name, argv, env=None, cwd=None):
        out = open(os.path.join(self.logdir, f"{name}.out"), "wb")
        err = open(os.path.join(self.logdir, f"{name}.err"), "wb")
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        out.close()
        err.close()
        self.started[name] = process
        self._write_pidfile()
        return process

    def _write_pidfile(self):
        with open(self.pidfile, "w") as f:
            for name, process in self.started.items():
                f.write(f"{process.pid} {_start_time(process.pid) or 0} {name}\n")

    def run(self, name, argv, env, log_path, timeout):
        """Runs a command to its end (the load client), held in the pid file meanwhile so that run.sh's trap
        stops it too; killed when it outlives `timeout` or when this Python is interrupted."""
        with open(log_path, "wb") as log:
            process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.started[name] = process
        self._write_pidfile()
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.stop(name)

    def first_line(self, name, timeout=30.0):
        """The first stdout line of a started server (e.g. 'listening on http://127.0.0.1:PORT')."""
        path = os.path.join(self.logdir, f"{name}.out")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(path, "rb") as f:
                data = f.read()
            if b"\n" in data:
                return data.split(b"\n", 1)[0].decode(errors="replace").strip()
            if self.started[name].poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"{name}: no first line on stdout ({self.tail(name)})")

    def tail(self, name, n=400):
        text = ""
        for kind in ("err", "out"):
            try:
                with open(os.path.join(self.logdir, f"{name}.{kind}"), "rb") as f:
                    text += f.read()[-n:].decode(errors="replace")
            except OSError:
                pass
        code = self.started[name].poll() if name in self.started else None
        return (f"exited {code}; " if code is not None else "") + " ".join(text.split())

    def stop(self, name):
        process = self.started.pop(name, None)
        if process is None:
            return
        if process.poll() is not None:
            # Already ended and reaped: its PID may belong to someone else by now. Its children (a thumbor
            # whose master died, say) are orphans this can no longer find.
            self._write_pidfile()
            return
        kill_tree(process.pid)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._write_pidfile()

    def stop_all(self):
        for name in list(self.started):
            self.stop(name)


def wait_http(url, process, timeout=30.0, ok=(200,)):
    """Polls url until it answers with a status in ok; raises when the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status in ok:
                    return
                last = response.status
        except urllib.error.HTTPError as error:
            if error.code in ok:
                return
            last = error.code
        except OSError as error:
            last = error
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer {ok} within {timeout:.0f} s (last: {last})")


class MemorySampler:
    """Samples the resident memory of the process trees under `roots` every `interval` seconds on a thread of
    its own, and keeps the peak of the sums: RSS (VmRSS: shared pages counted once per process, what `ps`
    shows) and PSS (shared pages divided among their sharers, from smaps_rollup)."""

    def __init__(self, roots, interval=0.1):
        self.roots = roots
        self.interval = interval
        self.peak_rss_kb = 0
        self.peak_pss_kb = 0
        self.max_processes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self):
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self):
        pids = [pid for root in self.roots for pid in tree(root)]
        rss = pss = 0
        for pid in pids:
            rss += _field_kb(f"/proc/{pid}/status", "VmRSS:")
            pss += _field_kb(f"/proc/{pid}/smaps_rollup", "Pss:")
        self.peak_rss_kb = max(self.peak_rss_kb, rss)
        self.peak_pss_kb = max(self.peak_pss_kb, pss)
        self.max_processes = max(self.max_processes, len(pids))
        self.samples += 1

    def result(self):
        return {
            "peak_rss_mb": round(self.peak_rss_kb / 1024, 1),
            "peak_pss_mb": round(self.peak_pss_kb / 1024, 1),
            "processes": self.max_processes,
            "samples": self.samples,
        }


class ForeignCpu:
    """How much CPU something outside the benchmark used during a case: all CPUs' busy time (/proc/stat)
    minus what the given process trees (the peer, the origin) and this Python with its finished children
    (wrk) used. A build or a test running beside the benchmark shows up here; a case with a large share is
    not comparable with one without."""

    def __init__(self, roots):
        self.roots = roots
        self.share = None

    def _snapshot(self):
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        # user + nice + system: time in processes. Interrupts and softirqs (the loopback network, mostly ours
        # at 50,000 requests/s) are left out, and so are kernel threads (ksoftirqd, kworkers), counted as ours
        # below: what is left is other user-space programs, the compilers and tests this is looking for.
        busy = fields[0] + fields[1] + fields[2]
        ours = 0
        kernel_threads = {pid for pid, ppid in _parents().items() if ppid == 2}
        for pid in {p for root in self.roots for p in tree(root)} | kernel_threads:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                rest = stat[stat.rindex(")") + 2:].split()
                ours += int(rest[11]) + int(rest[12])  # utime, stime (fields 14 and 15)
            except (OSError, ValueError, IndexError):
                pass
        t = os.times()
        mine = (t.user + t.system + t.children_user + t.children_system) * os.sysconf("SC_CLK_TCK")
        return busy, ours + mine, sum(fields), time.monotonic()

    def __enter__(self):
        self.start = self._snapshot()
        return self

    def __exit__(self, *exc):
        busy0, ours0, total0, _ = self.start
        busy1, ours1, total1, _ = self._snapshot()
        foreign = max(0, (busy1 - busy0) - (ours1 - ours0))
        self.share = round(foreign / max(1, total1 - total0), 3)


def _field_kb(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


if __name__ == "__main__":
    # procs.py --stop-pidfile FILE: run.sh's exit trap.
    if len(sys.argv) == 3 and sys.argv[1] == "--stop-pidfile":
        stop_pidfile(sys.argv[2])
    else:
        sys.exit("usage: procs.py --stop-pidfile FILE")

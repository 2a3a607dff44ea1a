#!/usr/bin/env python3
"""One run of the image-service benchmark: starts the origin, then each target in turn (peers.py), puts it
through its cases, stops it, and writes everything seen to one JSON file. run.sh calls this once per run, with
the venv's Python (pyvips is needed for the quality case).

Cases, in this order for each target that has them (load.py says how each figure is computed):
  cold      each of the 200 photos once, COLD_CONNECTIONS (8) connections
  hot       20 URLs again and again for SECONDS_PER_RUN, HOT_CONNECTIONS (8), after one warm-up pass
  overload  twice the target's cold images/s of the same run, open-loop (openloop.py: requests start at that
            rate whatever the server does) for SECONDS_PER_RUN over URLs never asked before (the same photos
            under /oK/ prefixes); without a cold figure, OVERLOAD_CONNECTIONS (64) wrk connections instead
  quality   the 20 hot thumbnails once more: bytes and PSNR against libvips (quality.py)
Peak memory is sampled over each load case (procs.MemorySampler).

    bench.py --out out/bench-service/results/STAMP/run-1.json --run 1
"""
import argparse
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import load  # noqa: E402
import peers  # noqa: E402
import quality  # noqa: E402
from procs import ForeignCpu, MemorySampler, Processes, stop_pidfile  # noqa: E402

GROUPS = ("thumbor", "imagefilter", "vips", "static", "service")


def env_int(name, default):
    return int(os.environ.get(name, default))


class Settings:
    def __init__(self):
        self.work = os.environ.get("WORK", "out/bench-service")
        self.seconds = env_int("SECONDS_PER_RUN", 10)
        self.cold_images = env_int("COLD_IMAGES", 200)
        self.cold_connections = env_int("COLD_CONNECTIONS", 8)
        self.cold_limit_s = env_int("COLD_LIMIT_S", 600)
        self.hot_connections = env_int("HOT_CONNECTIONS", 8)
        self.hot_threads = env_int("HOT_THREADS", 1)
        self.overload_connections = env_int("OVERLOAD_CONNECTIONS", 64)
        self.timeout_s = env_int("TIMEOUT_S", 10)
        self.only = [g for g in os.environ.get("ONLY", ",".join(GROUPS)).split(",") if g]
        self.service_bin = os.environ.get("IMAGE_SERVICE_BIN", "")
        self.anchor_cmd = os.environ.get("ANCHOR_CMD", "")

    def as_dict(self):
        return {k: v for k, v in vars(self).items()}


def source_path(n, prefix=""):
    return f"{prefix}/img-{n:03d}.jpg"


def warm_up(base, paths):
    """One sequential pass; returns the statuses that were not 200 (path -> status)."""
    bad = {}
    for path in paths:
        try:
            with urllib.request.urlopen(base + path, timeout=60) as response:
                response.read()
                if response.status != 200:
                    bad[path] = response.status
        except urllib.error.HTTPError as error:
            bad[path] = error.code
        except OSError as error:
            bad[path] = str(error)
    return bad


def run_case(case, target, ctx, s, workdir, sustained=None):
    """One case's figures; `sustained`, the target's cold images/s in this run, sets the overload's rate."""
    hot_sources = [source_path(n) for n in range(1, 21)]
    if case == "quality":
        files = [os.path.join(ctx.images, p.lstrip("/")) for p in hot_sources]
        return quality.probe(target.base, [target.path(ctx, p) for p in hot_sources], files,
                             keep_dir=os.path.join(ctx.rundir, "thumbnails", target.name))
    name = f"{target.name}-{case}"
    result = {}
    if case == "cold":
        paths = [target.path(ctx, source_path(n)) for n in range(1, s.cold_images + 1)]
        mode, connections, threads, seconds = "once", s.cold_connections, s.cold_connections, s.cold_limit_s
    elif case == "hot":
        paths = [target.path(ctx, p) for p in hot_sources]
        bad = warm_up(target.base, paths)
        if bad:
            result["warm_up_not_200"] = bad
        mode, connections, threads, seconds = "lean", s.hot_connections, s.hot_threads, s.seconds
    elif case == "overload":
        # Enough never-asked URLs that even 1,000 images/s does not come back to the first one.
        rounds = max(5, s.seconds * 5)
        paths = [target.path(ctx, source_path(n, f"/o{k}")) for k in range(1, rounds + 1) for n in range(1, 201)]
        mode, connections, threads, seconds = "loop", s.overload_connections, s.overload_connections, s.seconds
        if sustained:
            mode, connections = "open", None
    else:
        raise ValueError(case)
    origin = ctx.processes.started["origin"].pid
    with ForeignCpu(target.roots + [origin]) as foreign, MemorySampler(target.roots) as memory:
        if mode == "open":
            figures, raw = load.run_open_loop(ctx.processes, target.base, paths, workdir, name,
                                              round(2 * sustained, 1), seconds, s.timeout_s)
        else:
            figures, raw = load.run_wrk(ctx.processes, target.base, paths, mode, workdir, name, connections,
                                        threads, seconds, s.timeout_s)
    result.update(figures)
    result.update(memory.result())
    result["foreign_cpu_share"] = foreign.share
    if connections is not None:
        result["connections"] = connections
    result["wrk_output"] = raw
    return result


def run_anchor(cmd):
    if not cmd:
        return {"skipped": "ANCHOR_CMD not set"}
    started = time.monotonic()
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    lines = [l for l in done.stdout.strip().splitlines() if l.strip()]
    match = re.match(r"images/s\s+([0-9.]+)\s*$", lines[-1].strip()) if lines else None
    result = {"cmd": cmd, "exit": done.returncode, "seconds": round(time.monotonic() - started, 1)}
    if match:
        result["images_per_s"] = float(match.group(1))
    else:
        result["error"] = f"last stdout line is not 'images/s N': {lines[-1] if lines else ''!r}"
    return result


def versions(python):
    def out(argv):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            return " ".join((done.stdout + done.stderr).split())[:200]
        except OSError as error:
            return f"unavailable: {error}"
    found = {
        "nginx": out(["nginx", "-v"]),
        "wrk": out(["wrk", "-v"]).split(" Copyright")[0],
        "thumbor": out([os.path.join(os.path.dirname(python), "thumbor"), "--version"]),
        "python": platform.python_version(),
    }
    try:
        import importlib.metadata as md
        import pyvips
        found["pyvips"] = md.version("pyvips")
        found["libvips"] = f"{pyvips.version(0)}.{pyvips.version(1)}.{pyvips.version(2)}"
        found["pillow"] = md.version("pillow")
        found["tornado"] = md.version("tornado")
        found["pycurl"] = md.version("pycurl")
    except Exception as error:
        found["python_packages"] = f"unavailable: {error}"
    return found


def cpu_busy(seconds):
    """Fraction of all CPUs' time spent outside idle and iowait over the next `seconds` (from /proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields), idle
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return round(1 - (idle1 - idle0) / max(1, total1 - total0), 3)


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def describe_file(path):
    import hashlib
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
        modified = datetime.datetime.fromtimestamp(os.path.getmtime(path)).astimezone().isoformat(timespec="seconds")
        return {"path": path, "sha256_16": digest, "modified": modified}
    except OSError as error:
        return {"path": path, "error": str(error)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--run", type=int, default=1)
    args = parser.parse_args()
    s = Settings()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    rundir = os.path.abspath(os.path.join(s.work, "run"))
    os.makedirs(rundir, exist_ok=True)
    pidfile = os.path.join(s.work, "pids")
    stop_pidfile(pidfile)  # servers an earlier run left behind (killed with SIGKILL, say)
    processes = Processes(os.path.join(rundir, "logs"), pidfile)
    ctx = peers.Context(processes, rundir, os.path.join(s.work, "images"), os.path.join(s.work, "thumbs"),
                        sys.executable, s.service_bin, os.path.abspath(os.path.join(s.work, "service-cache")))
    report = {
        "run": args.run,
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        # How busy the CPUs were for 2 s before anything of this run started: a build or a test next to the
        # benchmark shows here and skews every figure. (The load average would also count the previous run.)
        "host": {"cpus": os.cpu_count(), "kernel": platform.release(), "cpu_busy_before": cpu_busy(2.0),
                 "loadavg_start": loadavg()},
        "git": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "settings": s.as_dict(),
        "versions": versions(sys.executable),
        "targets": {},
        "skipped": [],
    }
    if s.service_bin:
        report["service_binary"] = describe_file(s.service_bin)
    targets = [t for t in peers.all_targets() if t.group in s.only]
    if not s.service_bin and any(t.group == "service" for t in targets):
        targets = [t for t in targets if t.group != "service"]
        report["skipped"].append("service: IMAGE_SERVICE_BIN not set")
        print("bench: service skipped (IMAGE_SERVICE_BIN not set)", file=sys.stderr)
    try:
        peers.start_origin(ctx)
        report["origin_port"] = ctx.origin_port
        for target in targets:
            entry = {"group": target.group, "cases": {}}
            report["targets"][target.name] = entry
            print(f"bench: run {args.run}: {target.name}", file=sys.stderr)
            try:
                target.start(ctx)
                entry["how"] = target.describe(ctx)
                for case in ("cold", "hot", "overload", "quality"):
                    if case in target.cases:
                        sustained = entry["cases"].get("cold", {}).get("images_per_s")
                        entry["cases"][case] = run_case(case, target, ctx, s, os.path.join(rundir, "wrk"), sustained)
                        print(f"bench:   {case}: {brief(entry['cases'][case])}", file=sys.stderr)
            except Exception as error:
                entry["error"] = f"{type(error).__name__}: {error}"
                print(f"bench:   {target.name} failed: {entry['error']}", file=sys.stderr)
                traceback.print_exc()
            finally:
                processes.stop(target.name)
            time.sleep(1)  # let the last target's exit settle before the next one starts
        processes.stop_all()
        report["anchor"] = run_anchor(s.anchor_cmd)
    finally:
        processes.stop_all()
        report["finished"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        report["host"]["loadavg_end"] = loadavg()
        report["host"]["cpu_busy_after"] = cpu_busy(2.0)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
        print(f"bench: wrote {args.out}", file=sys.stderr)


def brief(case):
    if "mean_psnr_db" in case:
        return f"{case['ok_200']}/{case['images']} ok, {case['mean_bytes']} B mean, PSNR {case['mean_psnr_db']} dB"
    return (f"{case['images_per_s']} images/s, p50 {case['p50_ms']} ms, p99 {case['p99_ms']} ms, "
            f"non-2xx {case['non_2xx']}, timeouts {case['timeouts']}, peak RSS {case['peak_rss_mb']} MB, "
            f"foreign CPU {100 * case['foreign_cpu_share']:.0f}%")


if __name__ == "__main__":
    main()

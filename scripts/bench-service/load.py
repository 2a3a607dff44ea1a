"""One load case against one server: wrk with cycle.lua over a URL list, and the figures that come out of it.

  once  (cold)      each URL once; -t C -c C so every request's status and latency is recorded; wrk ends when
                    the last answer is in (-d is only a bound); images/s = 200 answers / (last answer - first
                    request)
  loop  (overload)  cycle for `seconds`, every request recorded; images/s = 200 answers / wrk's duration
  lean  (hot)       cycle for `seconds` with wrk's own counters only (a per-response Lua callback would cap
                    wrk below the static peer's rate); images/s = (requests - non-2xx) / wrk's duration, where
                    wrk counts status >= 400 as non-2xx
  open (overload)   requests due at a set rate for `seconds`, whatever the server does (openloop.py), every
                    request recorded with its latency from when it was due; figures as for loop
A timeout is a request not answered within `timeout` seconds: answered later than that, or still unanswered
when the load ended and older than that. wrk's own timeout count (lean) is reported as wrk gives it.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def percentile(values, p):
    """Nearest-rank percentile of a list (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def ms(us):
    return None if us is None else round(us / 1000.0, 2)


def run_wrk(processes, base, paths, mode, workdir, name, connections, threads, seconds, timeout):
    """Runs wrk (held by `processes` while it runs); returns (figures, raw output path)."""
    os.makedirs(workdir, exist_ok=True)
    urls = os.path.join(workdir, f"{name}.urls")
    out = os.path.join(workdir, f"{name}.wrk")
    with open(urls, "w") as f:
        f.write("\n".join(paths) + "\n")
    for stale in (out, out + ".done"):
        if os.path.exists(stale):
            os.remove(stale)
    env = dict(os.environ, BENCH_URLS=urls, BENCH_THREADS=str(threads), BENCH_MODE=mode, BENCH_OUT=out)
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--timeout", f"{timeout}s",
            "-s", os.path.join(HERE, "cycle.lua"), base]
    processes.run("wrk", argv, env, os.path.join(workdir, f"{name}.stdout"), timeout=seconds + 60)
    if not os.path.exists(out):
        raise RuntimeError(f"wrk wrote no results ({argv})")
    return parse(out, mode, timeout), out


def run_open_loop(processes, base, paths, workdir, name, rate, seconds, timeout):
    """Runs openloop.py at `rate` requests/s (held by `processes` while it runs); returns (figures, raw output
    path), the figures of loop mode with the rate and the connections the load opened."""
    os.makedirs(workdir, exist_ok=True)
    urls = os.path.join(workdir, f"{name}.urls")
    out = os.path.join(workdir, f"{name}.open")
    with open(urls, "w") as f:
        f.write("\n".join(paths) + "\n")
    if os.path.exists(out):
        os.remove(out)
    argv = [sys.executable, os.path.join(HERE, "openloop.py"), "--base", base, "--urls", urls, "--rate", str(rate),
            "--seconds", str(seconds), "--timeout", str(timeout), "--out", out]
    processes.run("openloop", argv, dict(os.environ), os.path.join(workdir, f"{name}.stdout"),
                  timeout=seconds + timeout + 60)
    if not os.path.exists(out):
        raise RuntimeError(f"openloop.py wrote no results ({argv})")
    figures = parse(out, "loop", timeout)
    with open(out) as f:
        for line in f:
            if line.startswith("#rate_per_s "):
                figures["rate_per_s"] = float(line.split()[1])
            elif line.startswith("#connections_opened "):
                figures["connections_opened"] = int(line.split()[1])
    return figures, out


def parse(path, mode, timeout):
    meta, records = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].strip().partition(" ")
                meta[key] = value.split()
            elif line.strip():
                status, latency = line.split()
                records.append((int(status), float(latency)))
    duration_s = float(meta["wrk_duration_us"][0]) / 1e6
    connect, read, write, status_errors, wrk_timeouts = (int(x) for x in meta["wrk_errors"])
    if mode == "lean":
        requests = int(meta["wrk_requests"][0])
        p50, p99, _ = (float(x) for x in meta["wrk_latency_us"])
        return {
            "requests": requests,
            "elapsed_s": round(duration_s, 3),
            "images_per_s": round((requests - status_errors) / duration_s, 1) if duration_s else 0,
            "p50_ms": ms(p50),
            "p99_ms": ms(p99),
            "non_2xx": status_errors,
            "timeouts": wrk_timeouts,
            "socket_errors": connect + read + write,
        }

    limit_us = timeout * 1e6
    answered = [(s, l) for s, l in records if s > 0]
    ok = [l for s, l in answered if 200 <= s < 300]
    count_200 = sum(1 for s, _ in answered if s == 200)
    non_2xx = {}
    for s, _ in answered:
        if not 200 <= s < 300:
            non_2xx[str(s)] = non_2xx.get(str(s), 0) + 1
    late = sum(1 for _, l in answered if l > limit_us)
    unanswered = [l for s, l in records if s == -1]
    timeouts = late + sum(1 for l in unanswered if l > limit_us)
    if mode == "once":
        elapsed_s = (float(meta["last_us"][0]) - float(meta["first_us"][0])) / 1e6
    else:
        elapsed_s = duration_s
    rejected = [l for s, l in answered if s == 503]
    return {
        "requests": len(records),
        "answered": len(answered),
        "ok_200": count_200,
        "elapsed_s": round(elapsed_s, 3),
        "images_per_s": round(count_200 / elapsed_s, 1) if elapsed_s > 0 else 0,
        "p50_ms": ms(percentile([l for _, l in answered], 50)),
        "p99_ms": ms(percentile([l for _, l in answered], 99)),
        "accepted_p50_ms": ms(percentile(ok, 50)),
        "accepted_p99_ms": ms(percentile(ok, 99)),
        "non_2xx": sum(non_2xx.values()),
        "non_2xx_by_status": non_2xx,
        "rejected_503": len(rejected),
        "rejected_p50_ms": ms(percentile(rejected, 50)),
        "rejected_p99_ms": ms(percentile(rejected, 99)),
        "timeouts": timeouts,
        "unanswered_at_end": len(unanswered),
        "socket_errors": sum(1 for s, _ in records if s == 0) + connect,
    }

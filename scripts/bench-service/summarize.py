#!/usr/bin/env python3
"""Markdown summary of one or more runs of the image-service benchmark (the run-N.json files bench.py writes):
one table per case, each cell the range over the runs (min-max; one value when the runs agree or there is one),
and, when the service ran, the service's figure divided by each peer's, computed within each run and then
ranged, so a ratio never mixes runs.

    summarize.py out/bench-service/results/STAMP            # every run-*.json in that folder
    summarize.py run-1.json run-2.json ...
"""
import glob
import json
import os
import sys

LABELS = {
    "service": "image-service",
    "thumbor": "thumbor 7.8",
    "thumbor-rs": "thumbor 7.8 + file result storage",
    "imagefilter": "nginx image_filter",
    "imagefilter-cache": "nginx image_filter + proxy_cache",
    "vips": "pyvips server",
    "static": "nginx static (20 ready thumbnails)",
}
ORDER = ["service", "thumbor", "thumbor-rs", "imagefilter", "imagefilter-cache", "vips", "static"]


def load(args):
    files = []
    for arg in args:
        files += sorted(glob.glob(os.path.join(arg, "run-*.json"))) if os.path.isdir(arg) else [arg]
    runs = []
    for path in files:
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def fmt(value, kind):
    if value is None:
        return "–"
    if kind == "rate":
        return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"
    if kind == "ms":
        return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:,.0f}"
    if kind == "ratio":
        return f"{value:.0f}×" if value >= 10 else f"{value:.2f}×" if value >= 0.1 else f"{value:.2g}×"
    if kind == "db":
        return f"{value:.2f}"
    if kind == "mb":
        return f"{value:.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def span(values, kind):
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    lo, hi = min(values), max(values)
    a, b = fmt(lo, kind), fmt(hi, kind)
    return a if a == b else f"{a}–{b}"


def case_values(runs, target, case, key):
    out = []
    for run in runs:
        figures = run.get("targets", {}).get(target, {}).get("cases", {}).get(case)
        if figures is not None:
            out.append(figures.get(key))
    return out


def ratios(runs, target, case, key):
    """service / target per run, for the runs where both have the figure."""
    out = []
    if target == "service":
        return out
    for run in runs:
        cases = run.get("targets", {})
        mine = cases.get("service", {}).get("cases", {}).get(case, {}).get(key)
        theirs = cases.get(target, {}).get("cases", {}).get(case, {}).get(key)
        if mine is not None and theirs:
            out.append(mine / theirs)
    return out


def targets_with(runs, case):
    seen = {name for run in runs for name, t in run.get("targets", {}).items() if case in t.get("cases", {})}
    return [t for t in ORDER if t in seen] + sorted(seen - set(ORDER))


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def summarize(runs):
    if not runs:
        return "no runs"
    first = runs[0]
    s = first["settings"]
    service_ran = any("service" in r.get("targets", {}) and r["targets"]["service"].get("cases") for r in runs)
    v = first.get("versions", {})
    out = [
        f"## image-service benchmark: {len(runs)} run(s), {first['started'][:16]} to "
        f"{runs[-1].get('finished', '?')[:16]}, commit {first.get('git', '?')}, {first['host']['cpus']} CPUs",
        "",
        f"{v.get('nginx', '?')}; {v.get('wrk', '?')}; {v.get('thumbor', '?')} (Pillow {v.get('pillow', '?')}, "
        f"tornado {v.get('tornado', '?')}, pycurl {v.get('pycurl', '?')}); pyvips {v.get('pyvips', '?')} "
        f"with libvips {v.get('libvips', '?')}. Each cell: the range over the runs. Ratios: image-service's "
        f"figure ÷ the peer's, in the same run.",
        "",
    ]
    ratio_cols = ["service ÷ peer images/s", "service ÷ peer p99"] if service_ran else []

    out.append(f"### Cold: {s['cold_images']} distinct 1920x1080 JPEGs, each once, to a 256x256 centre crop Q80; "
               f"{s['cold_connections']} connections")
    rows = []
    for t in targets_with(runs, "cold"):
        row = [LABELS.get(t, t)] + [span(case_values(runs, t, "cold", k), kind) for k, kind in (
            ("images_per_s", "rate"), ("p50_ms", "ms"), ("p99_ms", "ms"), ("non_2xx", "n"),
            ("timeouts", "n"), ("socket_errors", "n"), ("peak_rss_mb", "mb"))]
        if service_ran:
            row += [span(ratios(runs, t, "cold", "images_per_s"), "ratio"), span(ratios(runs, t, "cold", "p99_ms"), "ratio")]
        rows.append(row)
    out += [table(["peer", "images/s", "p50 ms", "p99 ms", "non-2xx", "timeouts", "socket errors",
                   "peak RSS MB"] + ratio_cols, rows), ""]

    out.append(f"### Hot: 20 thumbnails again and again for {s['seconds']} s after one warm-up pass; "
               f"{s['hot_connections']} connections, {s['hot_threads']} wrk thread(s)")
    rows = []
    for t in targets_with(runs, "hot"):
        row = [LABELS.get(t, t)] + [span(case_values(runs, t, "hot", k), kind) for k, kind in (
            ("images_per_s", "rate"), ("p50_ms", "ms"), ("p99_ms", "ms"), ("non_2xx", "n"),
            ("timeouts", "n"), ("socket_errors", "n"), ("peak_rss_mb", "mb"))]
        if service_ran:
            row += [span(ratios(runs, t, "hot", "images_per_s"), "ratio"), span(ratios(runs, t, "hot", "p99_ms"), "ratio")]
        rows.append(row)
    out += [table(["peer", "req/s", "p50 ms", "p99 ms", "non-2xx", "timeouts (wrk)", "socket errors",
                   "peak RSS MB"] + ratio_cols, rows), ""]

    out.append(f"### Overload: twice each peer's cold images/s of the same run, open loop, for {s['seconds']} s, "
               f"URLs never asked before (a peer without a cold figure: {s['overload_connections']} wrk "
               f"connections, closed loop)")
    rows = []
    for t in targets_with(runs, "overload"):
        row = [LABELS.get(t, t)] + [span(case_values(runs, t, "overload", k), kind) for k, kind in (
            ("rate_per_s", "rate"),
            ("images_per_s", "rate"), ("accepted_p50_ms", "ms"), ("accepted_p99_ms", "ms"),
            ("rejected_503", "n"), ("rejected_p50_ms", "ms"), ("rejected_p99_ms", "ms"))]
        others = [f["non_2xx"] - f["rejected_503"] for f in
                  (r["targets"][t]["cases"]["overload"] for r in runs
                   if "overload" in r.get("targets", {}).get(t, {}).get("cases", {}))]
        row += [span(others, "n")] + [span(case_values(runs, t, "overload", k), kind) for k, kind in (
            ("timeouts", "n"), ("socket_errors", "n"), ("peak_rss_mb", "mb"))]
        if service_ran:
            row += [span(ratios(runs, t, "overload", "images_per_s"), "ratio"),
                    span(ratios(runs, t, "overload", "accepted_p99_ms"), "ratio")]
        rows.append(row)
    out += [table(["peer", "offered req/s", "images/s", "accepted p50 ms", "accepted p99 ms", "503s", "503 p50 ms", "503 p99 ms",
                   "other non-2xx", "timeouts", "socket errors", "peak RSS MB"] + ratio_cols, rows), ""]

    out.append("### Output: the same 20 thumbnails from each peer; PSNR against libvips' centre crop of the "
               "same source (unencoded pixels; computed with pyvips)")
    rows = []
    for t in targets_with(runs, "quality"):
        rows.append([LABELS.get(t, t)] + [span(case_values(runs, t, "quality", k), kind) for k, kind in (
            ("ok_200", "n"), ("mean_bytes", "n"), ("mean_psnr_db", "db"), ("min_psnr_db", "db"),
            ("not_256x256", "n"))])
    out += [table(["peer", "200 of 20", "mean bytes", "mean PSNR dB", "min PSNR dB", "not 256x256"], rows), ""]

    anchors = [r.get("anchor", {}) for r in runs]
    rates = [a.get("images_per_s") for a in anchors]
    if any(x is not None for x in rates):
        line = f"Anchor (`{anchors[0].get('cmd')}`): {span(rates, 'rate')} images/s"
        if service_ran:
            per_run = [r["targets"]["service"]["cases"].get("cold", {}).get("images_per_s") / a["images_per_s"]
                       for r, a in zip(runs, anchors)
                       if a.get("images_per_s") and r.get("targets", {}).get("service", {}).get("cases", {}).get("cold")]
            line += f"; service cold ÷ anchor: {span(per_run, 'ratio')}"
        out.append(line)
    else:
        out.append(f"Anchor: {anchors[0].get('skipped') or anchors[0].get('error') or 'none'}")

    busy = [100 * b for r in runs for b in (r["host"].get("cpu_busy_before"), r["host"].get("cpu_busy_after"))
            if b is not None]
    if busy and max(busy) > 15:
        out.append(f"- warning: something else kept the CPUs {span(busy, 'mb')}% busy just before or after a run "
                   f"(2 s samples)")
    disturbed = []
    for r in runs:
        for name, t in r.get("targets", {}).items():
            for case, f in t.get("cases", {}).items():
                share = f.get("foreign_cpu_share")
                if share is not None and share > 0.05:
                    disturbed.append(f"run {r['run']} {LABELS.get(name, name)} {case} {100 * share:.0f}%")
    if disturbed:
        out.append("- warning: CPU used by processes outside the benchmark during a case (those figures are low "
                   "and not comparable): " + "; ".join(disturbed))
    binaries = {json.dumps(r.get("service_binary"), sort_keys=True) for r in runs if r.get("service_binary")}
    for b in sorted(binaries):
        b = json.loads(b)
        out.append(f"- service binary: {b.get('path')} (sha256 {b.get('sha256_16', '?')}…, modified {b.get('modified', '?')})")
    notes = sorted({note for r in runs for note in r.get("skipped", [])})
    errors = sorted({f"{name}: {t['error']}" for r in runs for name, t in r.get("targets", {}).items() if t.get("error")})
    for note in notes:
        out.append(f"- skipped: {note}")
    for error in errors:
        out.append(f"- failed: {error}")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(summarize(load(sys.argv[1:])), end="")


if __name__ == "__main__":
    main()

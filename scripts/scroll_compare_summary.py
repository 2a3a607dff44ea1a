"""Summarises scripts/bench-scroll-compare.sh's reports: per profile and script, the range over the runs of
each figure, conventional loading and the pipeline side by side, and whether each target held in every run."""
import json
import sys

runs = int(sys.argv[1])
scripts = sys.argv[2].split()
profiles = [p.split(":")[0] for p in sys.argv[3:]]


def span(values, fmt="{:.0f}"):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    low, high = min(values), max(values)
    return fmt.format(low) if fmt.format(low) == fmt.format(high) else (fmt + "–" + fmt).format(low, high)


def censored(value):
    """A censored percentile: None is "never", larger than any time."""
    return float("inf") if value is None else value


def text(value, fmt="{:.0f}"):
    return "never" if value is None else fmt.format(value)


def censored_span(values):
    shown = sorted(values, key=censored)
    low, high = text(shown[0]), text(shown[-1])
    return low if low == high else f"{low}–{high}"


for network in profiles:
    print(f"\n### {network}: {runs} runs of `sample-cli scroll --network {network} --script S --compare --compare-loaders-only`\n")
    print("| script | cells showing an image | first visits with pixels | first visits p50 / p95, all (censored) "
          "| after a stop: all pixels, worst (ms) | bytes (MB) | dropped | peak RSS, pipeline run (before it) |")
    print("|---|---|---|---|---|---|---|---|")
    verdicts = []
    for script in scripts:
        reports = [json.load(open(f"out/bench/scroll-compare-{network}-{script}-{n}.json")) for n in range(1, runs + 1)]
        conv = [r["conventional"] for r in reports]
        pipe = [r["pipeline"] for r in reports]

        def pair(get, fmt="{:.0f}"):
            return f"{span([get(r) for r in conv], fmt)} / {span([get(r) for r in pipe], fmt)}"

        all_first = lambda r: r["timeToFirstPixelsAllFirstVisits"]
        cens = (f'{censored_span([all_first(r)["p50Ms"] for r in conv])} / {censored_span([all_first(r)["p95Ms"] for r in conv])} vs '
                f'{censored_span([all_first(r)["p50Ms"] for r in pipe])} / {censored_span([all_first(r)["p95Ms"] for r in pipe])} ms')
        def stop_span(side):
            # A scroll that never stays a second on one screen (back-and-forth) has no stop to judge.
            if not any(r["stops"]["count"] for r in side):
                return "no stop"
            return censored_span([r["stops"]["allPixelsWorstMs"] for r in side if r["stops"]["count"]])

        stops = " / ".join(stop_span(side) for side in (conv, pipe))
        print(f"| {script} | {pair(lambda r: 100 * r['visibleCellsShowingImage'], '{:.1f}%')} "
              f"| {pair(lambda r: all_first(r)['shown'])} of {all_first(pipe[0])['visits']} "
              f"| {cens} | {stops} "
              f"| {pair(lambda r: r['bytesTransferred'] / 1e6, '{:.1f}')} | {pair(lambda r: r['droppedFrames'])} "
              f"| {span([r['peakResidentBytes'] / 2**20 for r in pipe])} ({span([r['residentBeforeRunBytes'] / 2**20 for r in pipe])}) MiB |")
        pairs = list(zip(conv, pipe))
        # Where neither loader showed anything in some run (a link too slow for the scroll), the ratio says nothing.
        nothing_shown = any(p["visibleCellsShowingImage"] == 0 and c["visibleCellsShowingImage"] == 0 for c, p in pairs)
        checks = {
            "cells showing ≥ 1.25x": None if nothing_shown else all(
                p["visibleCellsShowingImage"] >= 1.25 * c["visibleCellsShowingImage"] for c, p in pairs),
            "censored p50 ≤ conventional": all(censored(all_first(p)["p50Ms"]) <= censored(all_first(c)["p50Ms"]) for c, p in pairs),
            "censored p95 ≤ conventional": all(censored(all_first(p)["p95Ms"]) <= censored(all_first(c)["p95Ms"]) for c, p in pairs),
            "bytes ≤ 1.2x": all(p["bytesTransferred"] <= 1.2 * c["bytesTransferred"] for c, p in pairs),
            "0 dropped": all(p["droppedFrames"] == 0 for p in pipe),
            "peak RSS ≤ 300 MiB": all(p["peakResidentBytes"] <= 300 * 2**20 for p in pipe),
        }
        if network == "lte":
            checks["after a stop, all pixels ≤ 2 s"] = all(
                p["stops"]["count"] == 0 or censored(p["stops"]["allPixelsWorstMs"]) <= 2000 for p in pipe)
        verdicts.append((script, checks))
    print()
    for script, checks in verdicts:
        met = [name for name, ok in checks.items() if ok is True]
        missed = [name for name, ok in checks.items() if ok is False]
        unjudged = [name for name, ok in checks.items() if ok is None]
        print(f"- {script}: met in every run: {', '.join(met) or 'none'}; missed in some run: {', '.join(missed) or 'none'}"
              + (f"; not judged (neither loader showed an image in some run): {', '.join(unjudged)}" if unjudged else ""))

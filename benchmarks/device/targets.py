#!/usr/bin/env python3
"""The runtime's 16-core targets from the JSON lines of a device run.

    targets.py RUN.jsonl [RUN.jsonl ...] [--markdown]

Reads what `benchmarks/device/run.sh` (or the device suite it calls, .device/suite.sh)
printed: weak-scaling lines (`"weak"`), messaging lines (`"msg"`) beside the floor program's
(`"bench": "shm_floor"`), application lines (`"app"`), empty runs (`"startup"`), the
machine's own scaling (`"machine"`: machine_scaling.py's lines), carriers on and off
(`"carriers"`: interleave.py's lines), the category sampler off and on (`"sampler"`:
interleave.py's lines; `"benchmark": "sampler_overhead"`: sampler.py's).  Lines that carry a
`"pin"` setting (runs with worker binding on and off) are kept apart by it.  Prints one JSON
line per figure, each with its target where the runtime's messaging work sets one:

  weak_efficiency      T(2) / T(16), best times of rt_workload P 3000000 300000 16 0,
                       aggregated (4096) and not (0): at least 0.7
  weak_64_over_16      T(64) / T(16), the same runs: at most 4.5
  floor_over_rate      shm_floor's records per second over rt_workload P 0 1000000 16 0's
                       remote operations per second (aggregated) at 2, 8 and 16 PEs: at most 3
  app_speedup          an application's T(1) / T(16)
  startup_s            an empty run's best time (rt_workload P 0 0 16 0)
  machine_efficiency   the machine's own weak scaling beside weak_efficiency (no target):
                       T(2) / T(P) of P copies of noise_floor at once (what=copies; parts:
                       each part's mean CPU at 2 over at P) and of the weak-scaling command's
                       local fibers alone (what=local), from benchmarks/micro/machine_scaling.py;
                       and shm_floor's rate per PE at P over its rate per PE at 2
                       (what=shm_floor), at P = 8 and 16
  carriers_busy_gain   busy CPU with every arrived record a fiber (MPROF_CARRIERS=0) over
                       busy CPU with carriers, medians of the interleaved runs of the
                       `carriers` part, per command (msg, weak), PE count and aggregation;
                       with rate_ratio, the carriers' median rate over the other's
  sampler_cost_pct     what the category sampler (a timer signal per PE thread every
                       MPROF_SAMPLE_US) adds to the busy CPU: the `sampler` part's weak-scaling
                       runs at the default period over those with MPROF_SAMPLE_US=0, medians,
                       per PE count (what=weak); and sampler.py's PIPE runs at 1 ms and 250 us
                       (what=pipe, period_us)

and with --markdown a table of them for docs/measurements/sixteen-cores.md.  Where a run
repeats a measurement (the floor program twice, say) the best is taken, as the suite does
within each.  A figure whose runs are missing is left out, not guessed; a line of another
shape (a part cut off as it printed) is skipped with a note on stderr naming its place."""

import argparse
import json
import sys

WEAK_EFFICIENCY_MIN = 0.7
WEAK_64_OVER_16_MAX = 4.5
FLOOR_OVER_RATE_MAX = 3.0


def fail(msg):
    sys.exit(f"targets: {msg}")


def read_lines(paths):
    for path in paths:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            fail(f"{path}: {e.strerror}")
        for n, line in enumerate(text.splitlines(), 1):
            if not line.startswith("{"):
                continue
            try:
                yield f"{path}:{n}", json.loads(line)
            except json.JSONDecodeError as e:
                fail(f"{path}:{n}:{e.colno}: {e.msg}")


def best(table, key, value, better=min):
    """Keeps the better of the values seen for key."""
    table[key] = value if key not in table else better(table[key], value)


def collect(lines):
    tables = {}, {}, {}, {}, {}, {}, {}, {}
    for where, d in lines:
        try:
            take(d, *tables)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # a line cut short or of another shape: its figure is left out, and said so
            print(f"targets: {where}: skipped, {type(e).__name__}: {e}", file=sys.stderr)
    return tables


def take(d, weak, rate, floor, apps, startup, carriers, machine, sampler):
    """Files one JSON line into the table of its kind."""
    if isinstance(d, dict):
        pin = str(d.get("pin", "-"))
        if "sampler" in d and "before" in d and "after" in d:
            off, on = d["before"]["busy_median_s"], d["after"]["busy_median_s"]
            if off > 0:
                sampler[("weak", int(d["pes"]), "1000")] = 100 * (on / off - 1)
        elif d.get("benchmark") == "sampler_overhead":
            sampler[("pipe", 2, "1000")] = float(d["sampler_overhead_pct"])
            sampler[("pipe", 2, "250")] = float(d["sampler_overhead_250us_pct"])
        elif "machine" in d and isinstance(d.get("best_s"), (int, float)) and "pes" in d:
            key = (d["machine"], int(d["pes"]))
            if key not in machine or d["best_s"] < machine[key]["best_s"]:
                machine[key] = d
        elif "carriers" in d and "before" in d and "after" in d:
            carriers[(d["carriers"], int(d["pes"]), str(d["agg"]))] = d
        elif "weak" in d and "best_s" in d:
            best(weak, (pin, str(d["agg"]), d["pes"]), d["best_s"])
        elif "msg" in d and str(d.get("agg")) == "4096":
            ops = d.get("ops_per_s_total")
            if ops is None and d.get("ops") and d.get("best_s"):
                ops = d["ops"] / d["best_s"]
            if ops:
                best(rate, (pin, d["pes"]), ops, max)
        elif d.get("bench") == "shm_floor" and d.get("check") == "ok":
            best(floor, d["pes"], d["records_per_s_total"], max)
        elif "app" in d and "best_s" in d:
            best(apps, (pin, d["app"], d.get("args", ""), d["pes"]), d["best_s"])
        elif "startup" in d:
            best(startup, (pin, d["pes"]), d["best_s"])


def judged(value, at_least=None, at_most=None):
    """A figure's target and whether its value meets it."""
    if at_least is not None:
        return {"target": f">= {at_least}", "met": value >= at_least}
    return {"target": f"<= {at_most}", "met": value <= at_most}


def machine_figures(floor, machine):
    """How far the machine lets fixed work per thread scale, at 8 and 16 PEs against 2."""
    out = []
    for p in (8, 16):
        for what in ("copies", "local"):
            two, at = machine.get((what, 2)), machine.get((what, p))
            if not (two and at and at["best_s"] > 0):
                continue
            row = {
                "figure": "machine_efficiency",
                "what": what,
                "pes": p,
                "value": round(two["best_s"] / at["best_s"], 3),
                "runs_s": [two["best_s"], at["best_s"]],
            }
            a, b = two.get("cpu_mean_s"), at.get("cpu_mean_s")
            if what == "copies" and isinstance(a, dict) and isinstance(b, dict):
                num = (int, float)
                row["parts"] = {
                    k: round(v / b[k], 3)
                    for k, v in a.items()
                    if isinstance(v, num) and isinstance(b.get(k), num) and b[k] > 0
                }
            out.append(row)
        if 2 in floor and p in floor:
            out.append(
                {
                    "figure": "machine_efficiency",
                    "what": "shm_floor",
                    "pes": p,
                    "value": round(floor[p] / p / (floor[2] / 2), 3),
                }
            )
    return out


def figures(weak, rate, floor, apps, startup, carriers, machine, sampler):
    out = []
    pins = sorted({k[0] for k in weak} | {k[0] for k in rate} | {k[0] for k in apps})
    for pin in pins:
        for agg in ("4096", "0"):
            t = {p: v for (pn, a, p), v in weak.items() if pn == pin and a == agg}
            if 2 in t and 16 in t:
                out.append(
                    {
                        "figure": "weak_efficiency",
                        "pin": pin,
                        "agg": agg,
                        "value": round(t[2] / t[16], 3),
                        "runs_s": [t[2], t[16]],
                        **judged(t[2] / t[16], at_least=WEAK_EFFICIENCY_MIN),
                    }
                )
            if 16 in t and 64 in t:
                out.append(
                    {
                        "figure": "weak_64_over_16",
                        "pin": pin,
                        "agg": agg,
                        "value": round(t[64] / t[16], 2),
                        "runs_s": [t[16], t[64]],
                        **judged(t[64] / t[16], at_most=WEAK_64_OVER_16_MAX),
                    }
                )
        for p in (2, 8, 16):
            if (pin, p) in rate and p in floor:
                gap = floor[p] / rate[(pin, p)]
                out.append(
                    {
                        "figure": "floor_over_rate",
                        "pin": pin,
                        "pes": p,
                        "value": round(gap, 2),
                        "rate_per_s": round(rate[(pin, p)]),
                        "floor_per_s": floor[p],
                        **judged(gap, at_most=FLOOR_OVER_RATE_MAX),
                    }
                )
        names = sorted({(a, args) for (pn, a, args, _) in apps if pn == pin})
        for app, args in names:
            t = {p: v for (pn, a, ar, p), v in apps.items() if (pn, a, ar) == (pin, app, args)}
            if 1 in t and 16 in t:
                out.append(
                    {
                        "figure": "app_speedup",
                        "pin": pin,
                        "app": app,
                        "args": args,
                        "value": round(t[1] / t[16], 2),
                        "runs_s": [t[1], t[16]],
                    }
                )
    out += machine_figures(floor, machine)
    for (pin, p), v in sorted(startup.items()):
        out.append({"figure": "startup_s", "pin": pin, "pes": p, "value": v})
    for (what, p, agg), d in sorted(carriers.items()):
        off, on = d["before"]["busy_median_s"], d["after"]["busy_median_s"]
        if on > 0:
            out.append(
                {
                    "figure": "carriers_busy_gain",
                    "what": what,
                    "pes": p,
                    "agg": agg,
                    "value": round(off / on, 3),
                    "rate_ratio": d.get("median_ratio"),
                }
            )
    for (what, p, period), v in sorted(sampler.items()):
        out.append(
            {
                "figure": "sampler_cost_pct",
                "what": what,
                "pes": p,
                "period_us": period,
                "value": round(v, 2),
            }
        )
    return out


def markdown(rows):
    lines = ["| figure | setting | value | target |", "|---|---|---|---|"]
    for r in rows:
        setting = ", ".join(
            f"{k} {r[k]}"
            for k in ("what", "app", "args", "agg", "pes", "period_us", "pin")
            if k in r and r[k] not in ("", "-")
        )
        target = r.get("target", "")
        if target:
            target += " (met)" if r["met"] else " (not met)"
        lines.append(f"| {r['figure']} | {setting} | {r['value']} | {target} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="JSON-lines output of a device run")
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = ap.parse_args()
    rows = figures(*collect(read_lines(args.runs)))
    if not rows:
        fail(
            "no weak-scaling, messaging, application, start-up, machine, carriers or sampler "
            "lines in " + ", ".join(args.runs)
        )
    for r in rows:
        print(json.dumps(r))
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()

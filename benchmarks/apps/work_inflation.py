#!/usr/bin/env python3
"""Work inflation of an application against PEs: callgrind instruction counts at P = 1..16.

    work_inflation.py [--build DIR] [--pes 1,2,4,8,16] [--workers-check P] [--native]
                      (--app em3d|tripuzzle|eigenvalue|phylogeny | [--weak] -- COMMAND ...)

A speed-up measurement needs as many cores as PEs; a count does not.  If the P-PE run of a
problem executes k times the instructions of its 1-PE run (strong scaling: the same problem;
weak scaling, --weak: P times the 1-PE problem, so the P-PE run is compared with P x the 1-PE
count), its efficiency on P cores cannot exceed about 1/k, less with idle time and memory
effects.  Each P runs COMMAND under `valgrind --tool=callgrind` with MPROF_PES=P and
MPROF_WORKERS=1: the PEs are multiplexed on one thread, so the count is the work the program
does and nothing else -- no worker spins while it waits for another (callgrind serialises
threads, so a waiting worker's polling would be counted in amounts that depend on valgrind's
thread switches), and the same run gives the same count every time.  As a check,
--workers-check P runs P also with MPROF_WORKERS=P (a thread per PE, the real configuration):
its excess over the one-thread count is what waiting costs under callgrind, not work.

Per P the JSON gives the total instructions, per PE, the inflation, and the count split by
function groups (self instructions of callgrind_annotate, each function assigned by the object
file of the build that defines it, see GROUPS):
  app                 the application's own code (benchmarks/<app>/)
  library             the instrumented data structures (instrumented-lib/)
  runtime.spawn / .comm / .poll / .sched / .idle / .object / .stats / .other
  libc.malloc / libc.memcpy / libc.sort / libc.other, loader, other
  unattributed        the total less the functions listed (callgrind's own rounding)
so the groups add up to the total.  The kernel is not seen by callgrind: --native (on by
default with --app) also runs the command normally (default workers, the real configuration)
and reports its user and system CPU seconds, minor page faults and peak RSS from getrusage.
With --app the native runs also take a larger size at P = 1 and 2 (the sizes of the targets)
to show whether the ratios of the small size hold there; times are for ratios only (the machine
is shared).  The run profile's statistics (MPROF_OUT), summed over the PEs per module, explain
the counts.  The last line of the output is one JSON object.
"""

import argparse
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../.."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "micro"))
from invoke_instructions import PARTS, annotate, base_name, callgrind  # noqa: E402

# name: (executable under the build, callgrind arguments, weak scaling, larger native arguments)
APPS = {
    "em3d": (
        "benchmarks/em3d/em3d",
        ["--nodes=20000", "--iters=5"],
        True,
        ["--nodes=100000", "--iters=20"],
    ),
    "tripuzzle": ("benchmarks/tripuzzle/tripuzzle", ["--rows=5"], False, ["--rows=6"]),
    "eigenvalue": ("benchmarks/eigenvalue/eigenvalue", ["--n=1000"], False, ["--n=3000"]),
    "phylogeny": ("benchmarks/phylogeny/phylogeny", ["--chars=30"], False, []),
}

# runtime functions by name first (the parts of invoke_instructions.py), then by source file
RUNTIME_NAMES = {
    "spawn": PARTS["spawn"],
    "comm": PARTS["invoke"],
    "poll": PARTS["receive"],
    "sched": PARTS["dispatch"],
}
RUNTIME_FILES = {
    "comm": ("comm.c", "bulk.c", "shm/", "mpi/"),
    "sched": ("sched.c", "fiber.c", "counter.c"),
    "object": ("object.c", "snapshot.c"),
    "stats": (
        "stats.c",
        "profile.c",
        "sample.c",
        "observer.c",
        "trace.c",
        "json.c",
        "papi.c",
        "sde.c",
        "perf/",
    ),
}
MALLOC = re.compile(
    r"^(__libc_)?(malloc|free|calloc|realloc|cfree)$|^_int_|^malloc_|^sysmalloc|"
    r"^tcache|^unlink_chunk|^arena_|^__default_morecore|^alloc_perturb"
)
MEMCPY = re.compile(r"^_?_?(memcpy|memmove|mempcpy|memset|memcmp|bcmp)")
SORT = re.compile(r"^(msort|qsort)")


def fail(msg):
    sys.exit(f"work_inflation: {msg}")


def symbol_files(build, exe):
    """{function: source path} from the object files the executable is linked from: the
    runtime, the instrumented libraries and the executable's own directory (static functions of
    other programs would shadow names otherwise)."""
    exe_dir = os.path.relpath(os.path.dirname(os.path.abspath(exe)), os.path.abspath(build))
    roots = ["runtime", "instrumented-lib"]
    if not exe_dir.startswith(".."):
        roots.append(exe_dir)
    files = {}
    for r in roots:
        for obj in glob.glob(os.path.join(build, r, "**", "*.o"), recursive=True):
            rel = os.path.relpath(obj, build)
            if "/tests/" in rel or "test" in os.path.basename(os.path.dirname(rel)):
                continue  # the libraries' own test programs
            out = subprocess.run(["nm", "--defined-only", obj], capture_output=True, text=True)
            # CMake objects: <dir>/CMakeFiles/<target>.dir/<source path>.o
            src = re.sub(r"CMakeFiles/[^/]+\.dir/", "", rel)[:-2]
            for line in out.stdout.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "tTwW":
                    files.setdefault(base_name(parts[2]), src)
    return files


def group_of(fn, obj, files):
    """The group of one function (see the docstring)."""
    src = files.get(fn)
    if src is not None:
        if src.startswith("benchmarks/"):
            return "app"
        if src.startswith("instrumented-lib/"):
            return "library"
        if "idle" in fn:
            return "runtime.idle"
        for part, names in RUNTIME_NAMES.items():
            if fn in names:
                return f"runtime.{part}"
        for part, suffixes in RUNTIME_FILES.items():
            if any(s in src for s in suffixes):
                return f"runtime.{part}"
        return "runtime.other"
    if "libc.so" in obj:
        if MALLOC.search(fn):
            return "libc.malloc"
        if MEMCPY.search(fn):
            return "libc.memcpy"
        if SORT.search(fn):
            return "libc.sort"
        return "libc.other"
    if "ld-linux" in obj or "/ld-" in obj:
        return "loader"
    return "other"


def functions(out_file):
    """{(function, object): self instructions} of a callgrind output file."""
    return annotate(out_file, fail)


def env_for(pes, workers=None, profile=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    env["MPROF_PES"] = str(pes)
    if workers is not None:
        env["MPROF_WORKERS"] = str(workers)
    env["MPROF_OUT"] = profile or os.devnull
    return env


def profile_stats(profile):
    """{module: {statistic: sum over PEs}} of a run profile (empty without one)."""
    if not os.path.exists(profile) or os.path.getsize(profile) == 0:
        return {}
    try:
        with open(profile) as f:
            pes = json.load(f)["pes"]
    except (ValueError, KeyError) as e:
        fail(f"{profile}: not a run profile ({e})")
    out = {}
    for p in pes:
        for o in p.get("objects", []):
            mod = out.setdefault(o["module"], {})
            for k, v in o.get("stats", {}).items():
                mod[k] = mod.get(k, 0) + v
    return out


def counted(cmd, pes, workers, tmp, files):
    """One run under callgrind: total instructions, groups, top functions, statistics."""
    tag = f"{pes}.{workers}"
    out, profile = os.path.join(tmp, f"callgrind.{tag}"), os.path.join(tmp, f"profile.{tag}")
    # no category sampler: its SIGPROF comes per millisecond of CPU, which valgrind stretches
    # some 50-fold, and a signal that lands while a multiplexed PE runs on its own context
    # stack sometimes made valgrind itself abort ("client stack range ???")
    env = {**env_for(pes, workers, profile), "MPROF_SAMPLE_US": "0"}
    total, r = callgrind(cmd, env, out, fail=fail, where=f" at P={pes}")
    groups, by_fn = {}, {}
    for (fn, obj), n in functions(out).items():
        g = group_of(fn, obj, files)
        groups[g] = groups.get(g, 0) + n
        by_fn[fn] = by_fn.get(fn, 0) + n
    groups["unattributed"] = total - sum(groups.values())
    return {
        "total": total,
        "groups": dict(sorted(groups.items())),
        "functions": by_fn,
        "stats": profile_stats(profile),
        "stdout": r.stdout,
    }


def native(cmd, pes):
    """A normal run (default workers): getrusage of the child."""
    p = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env_for(pes)
    )
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} failed at P={pes}:\n{err[-2000:]}")
    return {
        "user_s": round(ru.ru_utime, 3),
        "sys_s": round(ru.ru_stime, 3),
        "minor_faults": ru.ru_minflt,
        "major_faults": ru.ru_majflt,
        "max_rss_kb": ru.ru_maxrss,
    }


def table(res, pes, weak, top):
    """The per-P figures: totals, inflation, groups per PE, and the functions that grow most."""
    base = res[pes[0]]["total"] / pes[0]
    rows = {}
    for p in pes:
        r = res[p]
        expect = base * p if weak else base * pes[0]
        rows[p] = {
            "total": r["total"],
            "per_pe": round(r["total"] / p),
            "inflation": round(r["total"] / expect, 4),
            "groups": r["groups"],
            "stats": r["stats"],
        }
    first, last = res[pes[0]]["functions"], res[pes[-1]]["functions"]
    scale = (pes[-1] / pes[0]) if weak else 1.0
    growth = {fn: last.get(fn, 0) - scale * first.get(fn, 0) for fn in set(first) | set(last)}
    grown = {fn: round(v) for fn, v in sorted(growth.items(), key=lambda kv: -kv[1])[:top] if v > 0}
    return rows, grown


def show(rows, grown, pes, weak):
    kind = "weak scaling: over P x the 1-PE count" if weak else "strong scaling: over P=1"
    print(f"inflation ({kind})")
    groups = sorted({g for r in rows.values() for g in r["groups"]})
    print(
        f"{'P':>3} {'total':>14} {'per PE':>13} {'inflation':>9}  "
        + " ".join(f"{g[:12]:>12}" for g in groups)
    )
    for p in pes:
        r = rows[p]
        per = " ".join(f"{r['groups'].get(g, 0) / p:12.0f}" for g in groups)
        print(f"{p:>3} {r['total']:>14,} {r['per_pe']:>13,} {r['inflation']:>9.3f}  {per}")
    print(
        f"functions that grow most from P={pes[0]} to P={pes[-1]} (instructions in all, over "
        f"{'P x ' if weak else ''}the P={pes[0]} count):"
    )
    for fn, v in grown.items():
        print(f"    {v:>14,}  {fn}")


def parse_pes(text):
    try:
        pes = [int(x) for x in text.split(",")]
    except ValueError:
        fail(f"--pes must be a comma-separated list of PE counts (got '{text}')")
    if not pes or min(pes) < 1 or pes != sorted(set(pes)):
        fail(f"--pes must be increasing PE counts of at least 1 (got '{text}')")
    return pes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--app", choices=sorted(APPS))
    ap.add_argument(
        "--weak",
        action="store_true",
        help="weak scaling: COMMAND's problem grows with P (compare with P x P=1)",
    )
    ap.add_argument("--pes", default="1,2,4,8,16")
    ap.add_argument(
        "--workers-check",
        type=int,
        default=0,
        metavar="P",
        help="also count P (one of --pes) with MPROF_WORKERS=P",
    )
    ap.add_argument("--native", action="store_true", help="normal runs too (default with --app)")
    ap.add_argument("--top", type=int, default=12, help="functions listed by growth")
    ap.add_argument("command", nargs="*", help="the command (after --), without --app")
    a = ap.parse_args()
    pes = parse_pes(a.pes)
    large = None
    if a.app:
        if a.command:
            fail("give --app or a command, not both")
        exe, args, weak, large_args = APPS[a.app]
        cmd = [os.path.join(a.build, exe), *args]
        large = [cmd[0], *large_args] if large_args else None
        a.weak, a.native = weak, True
    elif a.command:
        cmd = a.command
    else:
        fail("give --app NAME or -- COMMAND ...")
    if a.workers_check and a.workers_check not in pes:
        fail(f"--workers-check {a.workers_check} is not one of --pes {a.pes}")
    files = symbol_files(a.build, cmd[0])
    with tempfile.TemporaryDirectory(prefix="work_inflation.") as tmp:
        res = {p: counted(cmd, p, 1, tmp, files) for p in pes}
        check = None
        if a.workers_check:
            w = counted(cmd, a.workers_check, a.workers_check, tmp, files)
            one = res[a.workers_check]
            check = {
                "pes": a.workers_check,
                "total": w["total"],
                "groups": w["groups"],
                "over_one_worker": round(w["total"] / one["total"], 4),
            }
    rows, grown = table(res, pes, a.weak, a.top)
    show(rows, grown, pes, a.weak)
    out = {"command": cmd, "weak": a.weak, "pes": pes, "runs": rows, "grown": grown}
    if check:
        out["workers_check"] = check
        print(
            f"P={check['pes']} with a thread per PE: {check['total']:,} instructions, "
            f"{check['over_one_worker']:.3f} x the one-thread count"
        )
    if a.native:
        out["native"] = {p: native(cmd, p) for p in pes}
        for p, n in out["native"].items():
            print(
                f"native P={p}: user {n['user_s']:.3f} s, sys {n['sys_s']:.3f} s, "
                f"{n['minor_faults']} minor faults, RSS {n['max_rss_kb']} KB"
            )
        if large:
            out["native_large"] = {"command": large, **{p: native(large, p) for p in (1, 2)}}
            for p in (1, 2):
                n = out["native_large"][p]
                print(
                    f"native {' '.join(large_args)} P={p}: user {n['user_s']:.3f} s, sys "
                    f"{n['sys_s']:.3f} s, {n['minor_faults']} minor faults"
                )
    print(json.dumps(out))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()

#!/usr/bin/env python3
"""Hook-cost benchmark: instructions of N increments through a generated `M_INC` hook versus
N plain `+=` on a local struct, counted by valgrind's callgrind.

Both loops are the same C loop; only the statement in the body differs.  An empty asm
statement with a memory clobber after each increment makes the compiler keep every load,
add and store in both loops (otherwise it would fold either loop into one multiplication),
and the counts are restricted to the two loop functions with --toggle-collect, so program
start-up is not measured.  The runtime is replaced by a stub mp_stats_new (calloc): the
benchmark measures the hook, not the allocator.

Prints one JSON line: {"hook_instructions": ..., "plain_instructions": ..., "ratio": ...}
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mprof.iface import parse_interface  # noqa: E402
from mprof.iface.codegen import write  # noqa: E402

INTERFACE = """
interface bench -- hook-cost benchmark
statistics
  Count -- increments performed
  Other -- a second slot, so the record is a real multi-field struct
categories
  ALL -- everything
    { Count }
"""

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "bench_perf.h"

/* Stand-ins for the runtime: only the record allocation is needed. */
void *mp_stats_new(const mp_stat_module *module, uint64_t object_id) {
    (void)object_id;
    return calloc(module->nfields, 8);
}
int mp_access_register(const char *module, const char *name) { (void)module; (void)name; return 1; }
void mp_access_declare(int access_id) { (void)access_id; }

typedef struct { uint64_t Count; uint64_t Other; } plain_t;

/* The barrier: the compiler must assume `p` is read and written by the asm. */
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) uint64_t run_hook(bench_stats_t *rec, uint64_t n, uint64_t step) {
    for (uint64_t i = 0; i < n; i++) {
        BENCH_INC(rec, Count, step);
        KEEP(rec);
    }
    return BENCH_READ(rec, Count);
}

__attribute__((noinline)) uint64_t run_plain(plain_t *rec, uint64_t n, uint64_t step) {
    for (uint64_t i = 0; i < n; i++) {
        rec->Count += step;
        KEEP(rec);
    }
    return rec->Count;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    uint64_t n = strtoull(argv[2], NULL, 10);
    volatile uint64_t step = 1; /* not a compile-time constant */
    uint64_t result;
    if (argv[1][0] == 'h') {
        bench_stats_t *rec = bench_stats_create(1);
        result = run_hook(rec, n, step);
    } else {
        plain_t local = {0, 0};
        result = run_plain(&local, n, step);
    }
    printf("%llu\n", (unsigned long long)result);
    return result == n ? 0 : 1;
}
"""


def collected(exe: Path, mode: str, n: int, func: str, workdir: Path) -> int:
    out = workdir / f"callgrind.{mode}.out"
    subprocess.run(
        [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            f"--toggle-collect={func}", str(exe), mode, str(n),
        ],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    text = out.read_text()
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    if not m:
        raise RuntimeError(f"no instruction total in {out}")
    return int(m.group(1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="increments (default 1e6)")
    parser.add_argument("--cc", default=shutil.which("cc") or "gcc")
    parser.add_argument("--opt", default="-O2")
    args = parser.parse_args(argv)
    if not shutil.which("valgrind"):
        print(json.dumps({"error": "valgrind not found"}))
        return 1
    with tempfile.TemporaryDirectory(prefix="mprof-hookcost-") as tmp:
        work = Path(tmp)
        write(parse_interface(INTERFACE, "bench.perf"), work)
        (work / "driver.c").write_text(DRIVER)
        exe = work / "hook_cost"
        subprocess.run(
            [
                args.cc, "-std=c11", args.opt, "-Wall", "-Wextra",
                f"-I{work}", f"-I{ROOT / 'runtime' / 'include'}",
                str(work / "driver.c"), str(work / "bench_perf.c"), "-o", str(exe), "-lm",
            ],
            check=True,
        )  # fmt: skip
        hook = collected(exe, "hook", args.n, "run_hook", work)
        plain = collected(exe, "plain", args.n, "run_plain", work)
    print(
        json.dumps(
            {
                "hook_instructions": hook,
                "plain_instructions": plain,
                "ratio": round(hook / plain, 4),
                "increments": args.n,
                "hook_per_increment": round(hook / args.n, 3),
                "plain_per_increment": round(plain / args.n, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

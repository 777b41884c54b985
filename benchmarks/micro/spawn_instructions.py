#!/usr/bin/env python3
"""Instructions per spawn + dispatch of an empty fiber, counted by callgrind.

    spawn_instructions.py [--micro PATH] [--rounds N]

Runs `rt_micro --spawn-only R` under callgrind twice (R = N and 2N rounds of 1024 empty fibers
and one that ends the round), collecting only inside rt_micro's spawn_rounds (mp_spawn, the
scheduler's dispatch loop and the fibers, with statistics and latency accounting as built)
and floor_once (the plain ring of rt_micro's floor_ns).  The difference of the two runs per
fiber is the marginal cost of one spawn + dispatch: start-up, slab allocation and the first
round's cold misses cancel out.  Instruction counts are the same in every run, unlike times on
a shared machine.  The last line is JSON:
  spawn_dispatch_instructions  per fiber, with statistics and latency accounting on
  floor_instructions           per item of the plain ring (push + call of an empty function)
"""

import argparse
import json
import os
import sys

from invoke_instructions import callgrind  # (this directory) one runner for callgrind

BATCH = 1024


def fail(msg):
    sys.exit(f"spawn_instructions: {msg}")


def collected(micro, rounds, fn):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_")}
    total, _ = callgrind(
        [micro, "--spawn-only", str(rounds)], env, os.devnull, toggle=fn, fail=fail
    )
    return total


def per_item(micro, rounds, fn, items_per_round):
    a, b = collected(micro, rounds, fn), collected(micro, 2 * rounds, fn)
    return (b - a) / (rounds * items_per_round)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "../.."))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--micro", default=os.path.join(root, "build/benchmarks/micro/rt_micro"))
    ap.add_argument("--rounds", type=int, default=50)
    a = ap.parse_args()
    spawn = per_item(a.micro, a.rounds, "spawn_rounds", BATCH + 1)
    floor = per_item(a.micro, a.rounds, "floor_once", BATCH)
    print(
        f"spawn + dispatch of an empty fiber: {spawn:.1f} instructions "
        f"(plain ring floor {floor:.1f}; target <= 70)"
    )
    print(
        json.dumps(
            {"spawn_dispatch_instructions": round(spawn, 2), "floor_instructions": round(floor, 2)}
        )
    )


if __name__ == "__main__":
    main()

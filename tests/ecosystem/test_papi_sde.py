"""mprof statistics as PAPI software-defined events (docs/papi.md): a PAPI reader program
(tests/c/ecosystem/sde_reader.c) reads sde:::MPROF::<module>::<statistic> while the run goes
on and after it, and the values are the run profile's sums over PEs, a statistic the records
derive (mp_stats_derive) included: PAPI sees it live, and after the PEs fold it in."""

from __future__ import annotations

import json
import os
import subprocess

import pytest


@pytest.mark.parametrize("npes", [1, 3])
def test_sde_values_are_the_profile_sums(build_dir, tmp_path, npes):
    out = tmp_path / "run.json"
    proc = subprocess.run([str(build_dir / "tests/c/rt_sde_reader"), "500"],
                          env=dict(os.environ, MPROF_PES=str(npes), MPROF_OUT=str(out)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()}
    profile = json.loads(out.read_text())
    count = sum(o["stats"]["Count"] for pe in profile["pes"] for o in pe["objects"]
                if o["module"] == "demo")
    weight = sum(o["stats"]["Weight"] for pe in profile["pes"] for o in pe["objects"]
                 if o["module"] == "demo")
    derived = sum(o["stats"]["Derived"] for pe in profile["pes"] for o in pe["objects"]
                  if o["module"] == "demo")
    dispatched = sum(o["stats"]["ThreadDisp"] for pe in profile["pes"] for o in pe["objects"]
                     if o["module"] == "rts")
    assert count == 500 * npes * (npes + 1) // 2
    assert derived == count  # the events counted after the fold do not count
    for when in ("during", "after"):
        c, w, p, d, td = lines[when]
        assert int(c) == count
        assert float(w) == pytest.approx(weight)
        assert int(p) == npes  # rts::P is 1 on every PE
        assert int(d) == derived
    # derived from the latency table, live: every PE's empty fibers had run, and the other
    # PEs' work fibers may have (PE 0's, which reads, had not)
    assert dispatched == npes * (npes + 1) // 2 + npes
    assert npes * (npes + 1) // 2 <= int(lines["during"][4]) <= dispatched - 1
    assert int(lines["after"][4]) == dispatched


"""mprof statistics as PAPI software-defined events (docs/papi.md): a PAPI reader program
(tests/c/ecosystem/sde_reader.c) reads sde:::MPROF::<module>::<statistic> while the run goes
on and after it, and the values are the run profile's sums over PEs, a statistic the records
derive (mp_stats_derive) included: PAPI sees it live, and after the PEs fold it in."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest


@pytest.mark.parametrize("npes", [1, 3])
def test_sde_values_are_the_profile_sums(build_dir, tmp_path, npes):
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [str(build_dir / "tests/c/rt_sde_reader"), "500"],
        env=dict(
            os.environ, MPROF_PES=str(npes), MPROF_OUT=str(out), MPROF_WORKERS=str(npes)
        ),  # PE 0 spins for the others
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()}
    profile = json.loads(out.read_text())
    count = sum(
        o["stats"]["Count"] for pe in profile["pes"] for o in pe["objects"] if o["module"] == "demo"
    )
    weight = sum(
        o["stats"]["Weight"]
        for pe in profile["pes"]
        for o in pe["objects"]
        if o["module"] == "demo"
    )
    derived = sum(
        o["stats"]["Derived"]
        for pe in profile["pes"]
        for o in pe["objects"]
        if o["module"] == "demo"
    )
    dispatched = sum(
        o["stats"]["ThreadDisp"]
        for pe in profile["pes"]
        for o in pe["objects"]
        if o["module"] == "rts"
    )
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
    # PAPI 7.0 adds an event of a module no record was made of, and reads -1 (docs/papi.md)
    assert lines["unknown"] == ["0", "-1"]


def test_papi_native_avail_lists_the_events(build_dir, tmp_path, capsys):
    """libmprof_sde_events.so (mprof_add_sde_listing) makes papi_native_avail -sde list every
    statistic of the runtime and the structures, with its description, under the names a
    running program registers (the reader above reads two of them)."""
    from mprof.cli import main
    from mprof.iface import load_interface

    lib = build_dir / "libmprof_sde_events.so"
    proc = subprocess.run(
        ["papi_native_avail", "-sde", str(lib)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    listed = [
        line.strip("| ").strip()
        for line in proc.stdout.splitlines()
        if line.startswith("| sde:::MPROF::")
    ]
    root = build_dir.parent
    perfs = [root / "runtime/rts.perf", *sorted(root.glob("instrumented-lib/*/*.perf"))]
    assert main(["iface", "sde-events", *map(str, perfs)]) == 0
    expected = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert sorted(listed) == sorted(name for name, _, _ in expected)
    assert "sde:::MPROF::rts::ThreadDisp" in listed and "sde:::MPROF::graph::NMsg" in listed
    rts = load_interface(root / "runtime/rts.perf")
    disp = next(s for s in rts.statistics if s.name == "ThreadDisp")
    assert disp.description in proc.stdout


def test_sde_listing_source_for_own_interfaces(tmp_path):
    """`mprof iface sde-events --c` for a program's own interface builds into a library that
    papi_native_avail lists."""
    from mprof.cli import main

    example = Path(__file__).resolve().parents[2] / "examples/out-of-tree/hello.perf"
    perf = tmp_path / "hello.perf"
    perf.write_text(
        example.read_text().replace(
            "  NGreet -- Greetings sent",
            '  NGreet -- Greetings "sent" (\\n, 100 %)\n  Load : double -- load',
        )
    )
    src = tmp_path / "hello_sde.c"
    assert main(["iface", "sde-events", str(perf), "--c", str(src)]) == 0
    lib = tmp_path / "libhello_sde.so"
    subprocess.run(
        [
            "cc",
            "-std=c11",
            "-Wall",
            "-Werror",
            "-shared",
            "-fPIC",
            "-o",
            str(lib),
            str(src),
            "-lsde",
        ],
        check=True,
    )
    out = subprocess.run(
        ["papi_native_avail", "-sde", str(lib)], capture_output=True, text=True, timeout=120
    ).stdout
    assert "sde:::MPROF::hello::NGreet" in out and "sde:::MPROF::hello::Load" in out
    assert 'Greetings "sent" (\\n, 100 %)' in out
    assert "#include <sde_lib.h>" in src.read_text() and "PAPI_SDE_double}" in src.read_text()

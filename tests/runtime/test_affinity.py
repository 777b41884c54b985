"""Binding the shm backend's worker threads to processing units (MPROF_PIN;
runtime/src/shm/affinity.c).

rt_affinity prints, from each PE's pe_main (on its worker thread), the CPUs that thread may
run on.  With binding on (the default) and no more workers than usable units, each worker is
bound to a unit of its own, inside the process's affinity mask; otherwise every worker may run
on every unit of the mask.  The profile's settings.pinned_workers says which happened.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sysconfig
import tempfile
from pathlib import Path

from rt_helpers import clean_env

ALLOWED = sorted(os.sched_getaffinity(0))


def cpus_by_pe(stdout: str) -> dict[int, list[int]]:
    found = re.findall(r"affinity: pe=(\d+) cpus=([\d,]+)", stdout)
    return {int(pe): [int(c) for c in cpus.split(",")] for pe, cpus in found}


def test_each_worker_is_bound_to_a_unit_of_its_own(rt):
    workers = min(2, len(ALLOWED))
    run = rt.run("affinity", env={"MPROF_PES": workers, "MPROF_WORKERS": workers})
    cpus = cpus_by_pe(run.stdout)
    assert len(cpus) == workers, run.describe()
    assert all(len(c) == 1 and c[0] in ALLOWED for c in cpus.values()), cpus
    assert len({c[0] for c in cpus.values()}) == workers, cpus  # distinct units
    assert run.profile["settings"]["pinned_workers"] == workers


def test_multiplexed_pes_share_their_workers_unit(rt):
    run = rt.run("affinity", env={"MPROF_PES": 4, "MPROF_WORKERS": 1})
    cpus = cpus_by_pe(run.stdout)
    assert len(cpus) == 4 and len({tuple(c) for c in cpus.values()}) == 1, cpus
    assert len(cpus[0]) == 1 and cpus[0][0] in ALLOWED
    assert run.profile["settings"]["pinned_workers"] == 1


def test_binding_off_leaves_the_process_mask(rt):
    run = rt.run("affinity", env={"MPROF_PES": 2, "MPROF_WORKERS": 2, "MPROF_PIN": 0})
    assert all(c == ALLOWED for c in cpus_by_pe(run.stdout).values()), run.stdout
    assert run.profile["settings"]["pinned_workers"] == 0


def test_more_workers_than_units_are_not_bound(rt):
    n = len(ALLOWED) + 2
    run = rt.run("affinity", env={"MPROF_PES": n, "MPROF_WORKERS": n})
    cpus = cpus_by_pe(run.stdout)
    assert len(cpus) == n and all(c == ALLOWED for c in cpus.values()), cpus
    assert run.profile["settings"]["pinned_workers"] == 0


def test_binding_stays_inside_a_restricted_mask(rt):
    """A launcher (taskset, mpirun's binding) gave the process one unit: the worker is bound
    there, not to the machine's first unit."""
    last = ALLOWED[-1]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "p.json"
        proc = subprocess.run(
            [str(rt.bindir / "rt_affinity")],
            capture_output=True,
            text=True,
            env=clean_env(MPROF_PES="1", MPROF_OUT=str(out)),
            timeout=60,
            preexec_fn=lambda: os.sched_setaffinity(0, {last}),
        )
        assert proc.returncode == 0, proc.stderr
        assert cpus_by_pe(proc.stdout) == {0: [last]}
        assert json.loads(out.read_text())["settings"]["pinned_workers"] == 1


def test_a_bad_setting_is_reported_and_the_default_kept(rt):
    run = rt.run("affinity", env={"MPROF_PES": 1, "MPROF_PIN": "yes"})
    assert "ignoring MPROF_PIN=yes" in run.stderr
    assert run.profile["settings"]["pinned_workers"] == 1


# where Debian's libhwloc-plugins puts them (the multiarch library directory)
PLUGIN_DIR = Path("/usr/lib") / (sysconfig.get_config_var("MULTIARCH") or "") / "hwloc"


def _loaded_hwloc_plugins(rt, **env: str) -> set[str]:
    """hwloc plugins the dynamic loader opened in a run of rt_affinity (glibc's LD_DEBUG=files
    names every object dlopen loads)."""
    proc = subprocess.run(
        [str(rt.bindir / "rt_affinity")],
        capture_output=True,
        text=True,
        env=clean_env(MPROF_PES="2", MPROF_WORKERS="2", LD_DEBUG="files", **env),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "libhwloc" in proc.stderr, "LD_DEBUG=files printed nothing: " + proc.stderr[-500:]
    return set(re.findall(r"file=\S*/hwloc/(hwloc_\w+)\.so", proc.stderr))


def test_binding_loads_none_of_hwlocs_io_plugins(rt):
    """hwloc's I/O and XML plugins cost milliseconds of start-up and add no core: binding
    keeps them out, unless the user chose hwloc's plugins (then hwloc's choice stands)."""
    installed = {p.stem for p in PLUGIN_DIR.glob("hwloc_*.so")}
    assert installed, f"no hwloc plugins in {PLUGIN_DIR} (scripts/bootstrap.sh installs them)"
    assert _loaded_hwloc_plugins(rt) == set()
    assert _loaded_hwloc_plugins(rt, MPROF_PIN="0") == set()
    # the user's own setting is left alone: here it keeps out one plugin, hwloc loads the rest
    kept_out = sorted(installed)[0]
    loaded = _loaded_hwloc_plugins(rt, HWLOC_PLUGINS_BLACKLIST=kept_out)
    assert loaded == installed - {kept_out}, (loaded, installed)

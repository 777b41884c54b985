"""The program's own report (docs/reports.md): MPROF_MODEL=model.json makes the runtime price
its run at exit, with no Python, and print the Cost Profile with 90 % bands; every figure equals
`mprof report`'s to 1e-9 (relative), on the shared-memory and the MPI backend.  The model is a
made-up one over PIPE's real interfaces (rts, graph, pipe): a joint covariance over most
parameters, two parameters outside it, ignored terms."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mprof.iface import load_interface
from mprof.model import Model, ModuleInfo
from mprof.model.fit import t_quantile
from mprof.report.build import build_report
from mprof.report.text import report_json

ROOT = Path(__file__).resolve().parents[2]
PERFS = {
    "rts": ROOT / "runtime/rts.perf",
    "graph": ROOT / "instrumented-lib/eventgraph/graph.perf",
    "pipe": ROOT / "benchmarks/pipe/pipe.perf",
}
PIPE_ARGS = ["2", "3000", "5", "20", "15", "64", "1000"]
NUM = r"(-?[0-9.]+(?:e[-+]?[0-9]+)?|nan|inf)"


def make_model(path: Path, *, normalize=True, granularity="pe", measure="cpu", perfs=PERFS):
    ifaces = {
        m: ModuleInfo.from_interface(load_interface(p), str(p), p.read_text())
        for m, p in perfs.items()
    }
    rng = np.random.default_rng(3)
    values = {
        f"{m}:{t}": float(rng.uniform(1e-9, 1e-6)) for m, info in ifaces.items() for t in info.terms
    }
    values["rts:IdleCpu"] = 1.0
    ignored = ["rts:P", "graph:P", "pipe:P", "rts:Idle", "rts:ThreadContext"]
    for name in ignored:
        values.pop(name, None)
    fitted = [n for n in values if not n.startswith("rts:")]
    imported = [n for n in values if n.startswith("rts:")]
    cov_names, outside = fitted + imported[:-2], imported[-2:]
    a = rng.normal(size=(len(cov_names), len(cov_names)))
    sd = np.array([0.05 * values[n] for n in cov_names])
    cov = (a @ a.T / len(cov_names)) * np.outer(sd, sd)  # correlated, positive definite
    dof = 40
    q = t_quantile(0.9, dof)
    half = {n: q * float(np.sqrt(cov[i, i])) for i, n in enumerate(cov_names)}
    half.update({n: 0.1 * values[n] for n in outside})
    Model(
        values=values,
        halfwidths=half,
        fitted=fitted,
        covariance=cov,
        cov_names=cov_names,
        imported={n: "rts.model.json" for n in imported},
        ignored=ignored,
        interfaces=ifaces,
        quality={"residual_se": 0.03, "dof": dof, "t_quantile": q},
        settings={
            "granularity": granularity,
            "normalize": normalize,
            "measure": measure,
            "confidence": 0.9,
        },
    ).save(path)
    return path


def run_pipe(build_dir: Path, tmp: Path, model: Path, np_: int | None = None, **env_extra):
    out, report = tmp / "run.json", tmp / "report.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    env.update(MPROF_MODEL=str(model), MPROF_OUT=str(out), MPROF_REPORT=str(report), **env_extra)
    cmd = [str(build_dir / "benchmarks/pipe/pipe"), *PIPE_ARGS]
    if np_:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [shutil.which("mpirun"), "-np", str(np_), "--oversubscribe", *cmd]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), report.read_text() if report.exists() else "", proc


def parse(text: str) -> dict:
    """The self-report's figures: objects, PEs, where, total."""
    out = {"objects": {}, "pes": {}, "where": {}, "total": None, "unmodelled": ""}
    for line in text.splitlines():
        if m := re.match(r"Id (\d+) \((\w+)\):(.*)", line):
            cats = re.findall(rf"(\w+)= {NUM} \+- {NUM}", m.group(3))
            out["objects"][(int(m.group(1)), m.group(2))] = {
                c: (float(s), float(h)) for c, s, h in cats
            }
        elif m := re.match(rf"PE (\d+): Model= {NUM} \+- {NUM}, Measured= {NUM}", line):
            out["pes"][int(m.group(1))] = tuple(float(x) for x in m.groups()[1:])
        elif line.startswith("Where:"):
            out["where"] = {
                c: (float(s), float(h))
                for c, s, h in re.findall(rf"([\w:]+)= {NUM} \+- {NUM}", line)
            }
        elif m := re.match(
            rf"Time: Model= {NUM} \+- {NUM} \(parameters \+- {NUM}\), "
            rf"Total= {NUM}",
            line,
        ):
            out["total"] = tuple(float(x) for x in m.groups())
        elif line.startswith("Unmodelled:"):
            out["unmodelled"] = line
    return out


def check_equal(text: str, profile: dict, model_path: Path):
    from mprof.model.modelfile import load_model

    mine = parse(text)
    ref = report_json(build_report(profile, load_model(model_path)))
    close = dict(rel=1e-9, abs=1e-15)
    modelled = [o for o in ref["objects"] if o["modelled"]]
    assert set(mine["objects"]) == {(o["id"], o["module"]) for o in modelled}
    for o in modelled:
        got = mine["objects"][(o["id"], o["module"])]
        assert set(got) == set(o["categories"])
        for cat, figures in o["categories"].items():
            assert got[cat] == pytest.approx((figures["seconds"], figures["halfwidth"]), **close)
    assert set(mine["pes"]) == {p["pe"] for p in ref["pes"]}
    for p in ref["pes"]:
        assert mine["pes"][p["pe"]] == pytest.approx(
            (p["model_s"], p["halfwidth_s"], p["measured_s"]), **close
        )
    where = {f"{w['module']}:{w['category']}": (w["seconds"], w["halfwidth"]) for w in ref["where"]}
    assert set(mine["where"]) == set(where)
    for name, figures in where.items():
        assert mine["where"][name] == pytest.approx(figures, **close)
    assert mine["total"] == pytest.approx(
        (
            ref["model_total_s"],
            ref["model_band_halfwidth_s"],
            ref["model_param_halfwidth_s"],
            ref["measured_total_s"],
        ),
        **close,
    )
    return mine, ref


@pytest.mark.parametrize(
    "settings", [{}, {"normalize": False}, {"granularity": "run", "measure": "elapsed"}]
)
def test_self_report_equals_mprof_report(build_dir, tmp_path, settings):
    model = make_model(tmp_path / "model.json", **settings)
    profile, text, _ = run_pipe(build_dir, tmp_path, model)
    assert text.startswith("*** Cost Profile (model ")
    mine, ref = check_equal(text, profile, model)
    assert len(mine["objects"]) == 3 and mine["total"][0] > 0 and mine["total"][1] > 0


def test_self_report_on_mpi(build_dir, tmp_path):
    model = make_model(tmp_path / "model.json")
    profile, text, _ = run_pipe(build_dir, tmp_path, model, np_=2)
    assert profile["backend"] == "mpi"
    mine, _ = check_equal(text, profile, model)
    assert sorted(mine["pes"]) == [0, 1]


def test_stderr_without_a_profile_and_unmodelled_modules(build_dir, tmp_path):
    """Without MPROF_REPORT the report goes to stderr, also when no run profile is written;
    a module the model lacks is listed as unmodelled, as `mprof report` does."""
    model = make_model(
        tmp_path / "model.json", perfs={k: v for k, v in PERFS.items() if k != "pipe"}
    )
    env = dict(os.environ, MPROF_MODEL=str(model))
    env.pop("MPROF_OUT", None)
    env.pop("MPROF_REPORT", None)
    proc = subprocess.run(
        [str(build_dir / "benchmarks/pipe/pipe"), *PIPE_ARGS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    figures = parse(proc.stderr)
    assert {m for _, m in figures["objects"]} == {"rts", "graph"}
    assert "Unmodelled: Id 1026 (pipe: no model for this module)" in proc.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON: line 1, column 2"),
        ('{"schema": "other"}', "not an mprof model file"),
        ('{"schema": "mprof.model", "version": 9}', "model version 9 is not supported"),
        (None, "cannot read: No such file or directory"),
        # not a file: read to the end, /dev/zero would take all memory
        ("/dev/zero", "not a regular file"),
        # a file far larger than any model (sparse: no disk used)
        ("big", "larger than 64 MiB: not a model file"),
    ],
)
def test_bad_model_gives_a_message(build_dir, tmp_path, content, message):
    path = tmp_path / "model.json"
    if content == "/dev/zero":
        path = Path(content)
    elif content == "big":
        with open(path, "wb") as f:
            f.truncate(65 << 20)
    elif content is not None:
        path.write_text(content)
    env = dict(os.environ, MPROF_MODEL=str(path), MPROF_OUT=str(tmp_path / "run.json"))
    proc = subprocess.run(
        [str(build_dir / "benchmarks/pipe/pipe"), *PIPE_ARGS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0  # the run itself succeeded and wrote its profile
    assert (tmp_path / "run.json").exists()
    assert f"mprof: MPROF_MODEL: {path}: {message}" in proc.stderr
    assert "no Cost Profile" in proc.stderr and "Cost Profile (" not in proc.stderr

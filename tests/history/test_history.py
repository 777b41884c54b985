"""`mprof history` (docs/history.md): real `mprof gate --json` results and benchmark output
recorded for the commits of a git repository, shown as text and HTML, exported as an
airspeed velocity results folder that `asv publish` itself draws, and as Bencher Metric Format
JSON; bad input gives one `mprof:` message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mprof.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gate"))
from gate_synth import write_db  # noqa: E402

ASV = Path(sys.executable).with_name("asv")
BENCH_OUTPUT = """== spawn + dispatch (benchmarks/micro/spawn_instructions.py)
some text the benchmark printed
{"spawn_dispatch_instructions": %s, "detail": {"fiber_s": 1.5e-8, "ok": true}}
"""


def git(repo: Path, *args, env=None) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A git repository with three commits; each commit's gate result (the candidate 10 %
    slower at n=4000 in the second) and benchmark output recorded in history.db."""
    tmp = tmp_path_factory.mktemp("history")
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.org")
    git(repo, "config", "user.name", "dev")
    rng = np.random.default_rng(7)
    base = write_db(tmp / "base.db", rng)
    factors = [1.0, 1.1, 0.95]
    commits, gates = [], []
    for i, factor in enumerate(factors):
        (repo / "file").write_text(str(i))
        git(repo, "add", "file")
        date = f"2026-11-0{i + 1}T12:00:00+00:00"
        git(
            repo,
            "commit",
            "-q",
            "-m",
            f"change {i}",
            env=dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date),
        )
        commits.append(git(repo, "rev-parse", "HEAD"))
        cand = write_db(tmp / f"cand{i}.db", rng, factors={4000: factor})
        out = tmp / f"gate{i}.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mprof",
                "gate",
                "--baseline",
                str(base),
                "--candidate",
                str(cand),
                "--json",
                str(out),
                "-q",
            ],
            cwd=repo,
            capture_output=True,
        )
        gates.append(json.loads(out.read_text()))
        bench = tmp / f"bench{i}.txt"
        bench.write_text(BENCH_OUTPUT % (66.0 + i))
        # the commit, its date and branch come from git in the repository
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mprof",
                "history",
                "add",
                str(tmp / "history.db"),
                str(out),
                str(bench),
                "--machine",
                "ci",
            ],
            cwd=repo,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
    return {"tmp": tmp, "repo": repo, "db": tmp / "history.db", "commits": commits, "gates": gates}


def test_show_text_and_json(recorded, capsys):
    db, commits, gates = recorded["db"], recorded["commits"], recorded["gates"]
    assert main(["history", "show", str(db)]) == 0
    out = capsys.readouterr().out
    assert "== time" in out and "== spawn_instructions" in out
    assert "spawn_instructions/spawn_dispatch_instructions  [ci]" in out
    assert all(c[:10] in out for c in commits)
    assert main(["history", "show", str(db), "--json", "--series", "*n=4000*"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["commit"] for r in rows] == commits  # commit order
    assert all(r["branch"] == "main" and r["date"].startswith("2026-11-0") for r in rows)
    for row, gate in zip(rows, gates):
        (unit,) = [u for u in gate["units"] if u["id"] == row["series"]]
        assert row["value"] == unit["candidate"]
        assert row["low"] <= row["value"] <= row["high"]
    assert rows[1]["value"] > rows[0]["value"] * 1.03  # the slower commit shows
    assert main(["history", "show", str(db), "--json", "--category", "spawn*"]) == 0
    bench = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["series"] for r in bench} == {
        "spawn_instructions/spawn_dispatch_instructions",
        "spawn_instructions/detail/fiber_s",
    }
    assert [r["value"] for r in bench if r["series"].endswith("instructions")] == [66, 67, 68]


def test_show_html(recorded, tmp_path):
    page = tmp_path / "history.html"
    assert main(["history", "show", str(recorded["db"]), "--html", str(page)]) == 0
    text = page.read_text()
    assert text.count("<svg") == 2  # one chart per category: time, spawn_instructions
    assert text.count("class='series'") == 4
    assert all(c[:7] in text for c in recorded["commits"])
    import xml.dom.minidom

    for chunk in text.split("<svg")[1:]:  # every chart is well-formed SVG
        xml.dom.minidom.parseString("<svg" + chunk.split("</svg>")[0] + "</svg>")


def test_readding_replaces(recorded, tmp_path):
    db = tmp_path / "h.db"
    bench = tmp_path / "b.txt"
    for value in (1.0, 2.0):
        bench.write_text(json.dumps({"benchmark": "fit", "fit_seconds": value}) + "\n")
        assert (
            main(
                [
                    "history",
                    "add",
                    str(db),
                    str(bench),
                    "--commit",
                    "abcdef12",
                    "--date",
                    "2026-01-01T00:00:00Z",
                    "--machine",
                    "m",
                ]
            )
            == 0
        )
    assert (
        main(["history", "add", str(db), str(bench), "--commit", "abcdef12", "--machine", "m"]) == 0
    )  # no date: the recorded one stays
    from mprof.history.store import History

    with History(db) as h:
        points = h.points()
        assert [(p.m.series, p.m.value, p.m.unit) for p in points] == [
            ("fit/fit_seconds", 2.0, "s")
        ]
        assert h.commits()[0][1] == "2026-01-01T00:00:00Z"


def test_asv_results_are_published_by_asv(recorded, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(recorded["repo"]), str(repo)], check=True)
    assert (
        main(
            [
                "history",
                "export",
                str(recorded["db"]),
                "--format",
                "asv",
                "-o",
                str(repo / "results"),
            ]
        )
        == 0
    )
    (repo / "asv.conf.json").write_text(
        json.dumps(
            {
                "version": 1,
                "project": "mprof-history-test",
                "project_url": "http://example.org",
                "repo": ".",
                "branches": ["main"],
                "environment_type": "existing",
                "results_dir": "results",
                "html_dir": "html",
            }
        )
    )
    proc = subprocess.run(
        [str(ASV), "publish"], cwd=repo, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    index = json.loads((repo / "html" / "index.json").read_text())
    assert set(index["revision_to_hash"].values()) == set(recorded["commits"])
    name = next(n for n in index["benchmarks"] if "n_4000" in n and n.endswith("time"))
    graph = next((repo / "html" / "graphs" / "branch-main").rglob(f"{name}.json"))
    values = [v for _, v in json.loads(graph.read_text())]
    gates = recorded["gates"]
    expected = [
        next(u["candidate"] for u in g["units"] if "n=4000" in u["id"] and u["kind"] == "time")
        for g in gates
    ]
    assert values == pytest.approx(expected)
    # asv's own loader reads every results file
    from asv.results import iter_results

    loaded = list(iter_results(str(repo / "results")))
    assert sorted(r.commit_hash for r in loaded) == sorted(recorded["commits"])


def test_bencher_metric_format(recorded, capsys):
    db, commits = recorded["db"], recorded["commits"]
    assert main(["history", "export", str(db), "--format", "bencher"]) == 0
    latest = json.loads(capsys.readouterr().out)
    assert (
        main(["history", "export", str(db), "--format", "bencher", "--commit", commits[0][:8]]) == 0
    )
    first = json.loads(capsys.readouterr().out)
    assert set(latest) == set(first)
    for doc in (latest, first):  # BMF: benchmark -> measure -> value and optional bounds
        for bench, measures in doc.items():
            assert isinstance(bench, str) and measures
            for measure, metric in measures.items():
                assert set(metric) <= {"value", "lower_value", "upper_value"}
                assert isinstance(metric["value"], float)
                if "lower_value" in metric:
                    assert metric["lower_value"] <= metric["value"] <= metric["upper_value"]
    assert latest["spawn_instructions/spawn_dispatch_instructions"]["bench"]["value"] == 68
    assert first["spawn_instructions/spawn_dispatch_instructions"]["bench"]["value"] == 66
    key = next(k for k in first if "n=4000" in k and k.endswith("::time"))
    assert set(first[key]) == {"time"} and "lower_value" in first[key]["time"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "{tmp}/missing.db"], "no such history database"),
        (["show", "{profile_db}"], "not an mprof history database"),
        (["add", "{tmp}/h.db", "{tmp}/empty.txt", "--commit", "abc123"], "neither a gate result"),
        (["add", "{tmp}/h.db", "{tmp}/missing.json", "--commit", "abc123"], "cannot read"),
        (["add", "{tmp}/h.db", "{bench}", "--commit", "not-a-hash"], "not a commit hash"),
        (
            ["add", "{tmp}/h.db", "{bench}", "--commit", "abc123", "--date", "yesterday"],
            "not an ISO 8601 date",
        ),
        (["add", "{tmp}/h.db", "{bench}"], "no --commit given"),
        (["add", "{tmp}/h.db", "{tmp}/clash.txt", "--commit", "abc1"], "clash.txt:1: two keys"),
        (["add", "{tmp}/h.db", "{tmp}/named.txt", "--commit", "abc1"], "named.txt:1: benchmark:"),
        (["add", "{tmp}/h.db", "{bench}", "--commit", "abc123", "--date", ""], "--date: empty"),
        (["export", "{db}", "--format", "asv"], "needs -o DIR"),
        (["export", "{db}", "--format", "bencher", "--commit", "ffff0000"], "not in the history"),
        (["show", "{db}", "--series", "nothing*"], "no measurement matches"),
    ],
)
def test_errors(recorded, tmp_path, monkeypatch, capsys, argv, message):
    (tmp_path / "empty.txt").write_text("no numbers here\n")
    (tmp_path / "clash.txt").write_text('{"a/b": 1, "a": {"b": 2}}\n')
    (tmp_path / "named.txt").write_text('{"benchmark": 5, "x": 1}\n')
    bench = tmp_path / "bench.txt"
    bench.write_text('{"x": 1}\n')
    profile_db = write_db(tmp_path / "profiles.db", np.random.default_rng(1), reps=1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    args = [
        a.format(tmp=tmp_path, db=recorded["db"], bench=bench, profile_db=profile_db) for a in argv
    ]
    assert main(["history", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mprof: ") and message in err and "Traceback" not in err


def test_an_endless_or_binary_input_is_refused(tmp_path, monkeypatch, capsys):
    """An input is read up to MPROF_MAX_INPUT_MB, never until memory runs out, and bytes that
    are not UTF-8 are named by their place; no history is created for either."""
    monkeypatch.setenv("MPROF_MAX_INPUT_MB", "1")
    history = tmp_path / "h.db"
    argv = ["history", "add", str(history), "/dev/zero", "--commit", "abc123"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "mprof: /dev/zero: gate JSON or benchmark output is larger than 1 MiB "
        "(set MPROF_MAX_INPUT_MB to read larger files)\n"
    )
    binary = tmp_path / "bench.txt"
    binary.write_bytes(b'{"x": 1}\n{"y": \xff}\n')
    assert main(["history", "add", str(history), str(binary), "--commit", "abc123"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mprof: {binary}:2:7: not valid UTF-8 (byte 0xff"), err
    assert not history.exists()


def test_a_line_cut_off_is_named_with_a_warning(tmp_path, capsys):
    """An interrupted benchmark leaves its last JSON line cut off: its figures are not there,
    which the command says at the line; the lines before it are added."""
    bench = tmp_path / "bench.txt"
    bench.write_text('== title\n{"benchmark": "b", "x": 1}\n  {"benchmark": "b", "y": 2, "z": \n')
    argv = ["history", "add", str(tmp_path / "h.db"), str(bench), "--commit", "abc123"]
    assert main([*argv, "--date", "2026-01-01T00:00:00Z"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(
        f"{bench}:3:34: warning: skipped a line that begins like a JSON object but is not one"
    ), err
    assert "1 bench measurement(s)" in err


@pytest.mark.parametrize("argv", [["show"], ["export", "--format", "bencher"]])
def test_reading_an_empty_file_leaves_it_empty(tmp_path, capsys, argv):
    """show and export only read: an empty file is no history, and stays empty."""
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert main(["history", argv[0], str(empty), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert "not an mprof history database (it has no tables" in err
    assert empty.read_bytes() == b""


def test_asv_export_into_a_file_is_refused_and_writes_nothing(recorded, tmp_path, capsys):
    history = recorded["db"]
    blocker = tmp_path / "afile"
    blocker.write_text("keep")
    assert main(["history", "export", str(history), "--format", "asv", "-o", str(blocker)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"mprof: cannot create the asv results folder {blocker}: a file of that name "
        "is in the way (name a folder)"
    ), err
    assert blocker.read_text() == "keep"

"""mprof.frames (docs/frames.md): tidy pandas DataFrames of a real PIPE database, the same
tables as CSV and Parquet through `mprof db export` (read back with pandas and pyarrow), the
Cost Profile per category against hand-computed costs, a Hatchet GraphFrame with the PE as
index level `rank`, and a Thicket of every run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import mprof.frames as mf
from mprof.cli import main
from mprof.db.store import ProfileDB
from mprof.profile import load_profiles

from conftest import M_VALUES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from report_helpers import (
    PARAMS,
    expected_costs,
    make_model,
    make_run,  # noqa: E402
    with_categories,
)


def test_runs_and_pe_times(pipe_db):
    runs = mf.runs(pipe_db)
    assert list(runs.columns[: len(mf.RUN_COLUMNS)]) == mf.RUN_COLUMNS
    assert len(runs) == 2 * len(M_VALUES)
    assert sorted(set(runs["param.M"])) == list(M_VALUES)
    assert set(runs["setting.agg_bytes"]) == {1000}
    assert (runs["npes"] == 2).all() and (runs["backend"] == "shm").all()
    times = mf.pe_times(pipe_db)
    assert list(times.columns) == mf.PE_COLUMNS
    profiles = {r.id: r for r in load_profiles(pipe_db)}
    for row in times.itertuples():
        pe = profiles[row.run_id].pes[row.pe]
        assert (row.elapsed_s, row.cpu_s, row.idle_cpu_s) == (pe.elapsed_s, pe.cpu_s, pe.idle_cpu_s)
    # the runtime's sampled CPU time per access category adds up to the CPU time of each PE
    # that got a sample (runs shorter than the sampling period have none)
    cats = mf.category_times(pipe_db).groupby(["run_id", "pe"])["cpu_s"].sum()
    cpu = times.set_index(["run_id", "pe"])["cpu_s"]
    assert len(cats) > 0
    assert list(cats) == pytest.approx([cpu[key] for key in cats.index], rel=1e-6, abs=1e-9)
    selected = mf.runs(pipe_db, where=[_cond("M=800")])
    assert list(selected["param.M"]) == [800, 800]


def _cond(text):
    from mprof.db.store import Condition

    return Condition.parse(text)


def test_statistics_and_latency_are_tidy(pipe_db):
    stats = mf.statistics(pipe_db)
    assert list(stats.columns) == mf.STAT_COLUMNS
    assert not stats.duplicated(["run_id", "pe", "object_id", "statistic"]).any()
    for run in load_profiles(pipe_db):
        totals = run.stat_totals()
        mine = stats[stats["run_id"] == run.id].groupby(["module", "statistic"])["value"].sum()
        assert {k: float(v) for k, v in mine.items()} == {k: float(v) for k, v in totals.items()}
    lat = mf.latency(pipe_db)
    assert list(lat.columns) == mf.LATENCY_COLUMNS
    # the rows read back from the database's latency table are those of the imported documents
    with ProfileDB(pipe_db, create=False) as db:
        doc_rows = sorted(
            (run_id, pe["pe"], r["access"], r["enabler"], r["count"])
            for run_id, doc in db.documents()
            for pe in doc["pes"]
            for r in pe["latency"]
        )
    assert (
        sorted(zip(lat["run_id"], lat["pe"], lat["access"], lat["enabler"], lat["count"]))
        == doc_rows
    )
    assert len(lat) > 0
    assert {"graph:ENQ", "graph:DEQ"} <= set(lat["access"])
    # a pivot by category, the kind of question the tidy layout is for
    by_access = lat.groupby("access")["count"].sum()
    assert by_access["graph:DEQ"] > 0


def test_cost_categories_and_fits(tmp_path):
    model = make_model()
    model_path = tmp_path / "model.json"
    model.save(model_path)
    profile = tmp_path / "run.json"
    profile.write_text(json.dumps(make_run(npes=3)))
    cats = mf.cost_categories(profile, model_path)
    assert list(cats.columns) == mf.COST_COLUMNS
    assert set(cats["run_id"]) == {1}
    for pe in range(3):
        mine = {
            f"{r.module}:{r.category}": r.seconds
            for r in cats[cats["pe"] == pe].itertuples()
            if r.seconds
        }
        expected = {k: v for k, v in expected_costs(pe).items() if v}
        assert mine == pytest.approx(expected, rel=1e-12)
    assert (cats["halfwidth"] >= 0).all() and (cats["sd"] >= 0).all()
    fits = mf.fits(model_path)
    assert list(fits.columns) == mf.FIT_COLUMNS
    fitted = fits[fits["origin"] == "fitted"].set_index("parameter")
    assert fitted["value"].to_dict() == pytest.approx(PARAMS)
    # the interval recorded in the model is the one the frame reports
    assert fitted.loc["rts:Thread", "halfwidth"] == pytest.approx(0.01 * PARAMS["rts:Thread"])
    assert set(fits[fits["ignored"]]["parameter"]) == set(model.ignored)


def test_db_export_csv_and_parquet(pipe_db, tmp_path, capsys):
    assert main(["db", "export", str(pipe_db), "--format", "csv", "-o", str(tmp_path / "csv")]) == 0
    assert sorted(p.name for p in (tmp_path / "csv").iterdir()) == [
        "category_times.csv",
        "latency.csv",
        "pe_times.csv",
        "runs.csv",
        "statistics.csv",
    ]
    assert (
        main(["db", "export", str(pipe_db), "--format", "parquet", "-o", str(tmp_path / "pq")]) == 0
    )
    for name in mf.TABLES:
        mine = mf.table(name, pipe_db)
        from_csv = pd.read_csv(tmp_path / "csv" / f"{name}.csv")
        table = pq.read_table(tmp_path / "pq" / f"{name}.parquet")  # pyarrow itself
        assert table.column_names == list(mine.columns)
        assert table.num_rows == len(mine) == len(from_csv)
        pd.testing.assert_frame_equal(table.to_pandas(), mine, check_dtype=False)
        pd.testing.assert_frame_equal(from_csv, mine, check_dtype=False)
    capsys.readouterr()
    assert (
        main(
            ["db", "export", str(pipe_db), "--format", "csv", "--table", "runs", "--where", "M=400"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run_id,program,backend,npes") and len(lines) == 3


def _db_of(tmp_path, name, stats_of_pe):
    """A database of one 2-PE run whose rts object has the statistics stats_of_pe(pe) too."""
    doc = make_run(npes=2)
    for pe in doc["pes"]:
        pe["objects"][0]["stats"].update(stats_of_pe(pe["pe"]))
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    assert main(["db", "import", str(tmp_path / f"{name}.db"), str(path)]) == 0
    return tmp_path / f"{name}.db"


def test_u64_statistics_are_exported_exactly(tmp_path, capsys):
    """A u64 counter taken below zero (2^64 - 1) stays exact in CSV and Parquet: the column
    of integer statistics is an integer column (uint64), not doubles that round the last
    digits (1.8446744073709552e+19) and write every 5 as 5.0."""
    db = _db_of(tmp_path, "u64", lambda pe: {"Sched": 2**64 - 1 if pe == 0 else 5})
    capsys.readouterr()
    assert main(["db", "export", str(db), "--format", "csv", "--table", "statistics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "1,0,0,rts,Sched,18446744073709551615" in lines
    assert "1,1,0,rts,Sched,5" in lines
    assert not any(line.endswith(".0") for line in lines[1:])
    out = tmp_path / "s.parquet"
    assert (
        main(
            [
                "db",
                "export",
                str(db),
                "--format",
                "parquet",
                "--table",
                "statistics",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    table = pq.read_table(out)
    assert str(table.schema.field("value").type) == "uint64"
    frame = table.to_pandas()
    sched = frame[frame["statistic"] == "Sched"].set_index("pe")["value"]
    assert [int(sched[0]), int(sched[1])] == [2**64 - 1, 5]
    assert mf.statistics(db)["value"].dtype == "uint64"


def test_signed_and_u64_statistics_in_one_column_are_exported_exactly(tmp_path, capsys):
    """-1 and 2^64 - 1 fit no one integer type: CSV keeps their digits, Parquet writes them as
    decimals (pyarrow cannot write the Python ints pandas keeps for them)."""
    db = _db_of(tmp_path, "mixed", lambda pe: {"Sched": 2**64 - 1} if pe == 0 else {"Offset": -1})
    capsys.readouterr()
    assert main(["db", "export", str(db), "--format", "csv", "--table", "statistics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "1,0,0,rts,Sched,18446744073709551615" in lines and "1,1,0,rts,Offset,-1" in lines
    out = tmp_path / "s.parquet"
    assert (
        main(
            [
                "db",
                "export",
                str(db),
                "--format",
                "parquet",
                "--table",
                "statistics",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    frame = pq.read_table(out).to_pandas()
    values = {
        (pe, stat): value
        for pe, stat, value in zip(frame["pe"], frame["statistic"], frame["value"])
    }
    assert int(values[0, "Sched"]) == 2**64 - 1 and int(values[1, "Offset"]) == -1
    assert int(values[0, "ThreadAlloc"]) == 1000


def test_db_export_tables_with_a_model(pipe_db, tmp_path):
    model_path = tmp_path / "model.json"
    make_model().save(model_path)
    assert (
        main(
            [
                "db",
                "export",
                str(pipe_db),
                "--format",
                "csv",
                "-o",
                str(tmp_path / "out"),
                "--model",
                str(model_path),
            ]
        )
        == 0
    )
    cats = pd.read_csv(tmp_path / "out" / "cost_categories.csv")
    assert {"rts", "graph", "pipe"} <= set(cats["module"])
    assert len(set(cats["run_id"])) == 2 * len(M_VALUES)
    fits = pd.read_csv(tmp_path / "out" / "fits.csv")
    assert set(PARAMS) <= set(fits["parameter"])


def test_sampled_category_times(tmp_path):
    """The run profile's per-PE `categories` (CPU time sampled per access category), where a
    runtime recorded them, as rows; a profile without them gives none."""
    doc = make_run(npes=2)
    rows = {0: [("pipe:consume", 0.2, 50), ("(idle)", 0.01, 3)], 1: [("graph:DEQ", 0.1, 25)]}
    for pe in doc["pes"]:
        pe["categories"] = [{"access": a, "cpu_s": t, "samples": n} for a, t, n in rows[pe["pe"]]]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    frame = mf.category_times(path)
    assert list(frame.columns) == mf.CATEGORY_COLUMNS
    assert [tuple(r) for r in frame.itertuples(index=False)] == [
        (1, pe, a, t, n) for pe in (0, 1) for a, t, n in rows[pe]
    ]
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(make_run(npes=2)))
    assert mf.category_times(plain).empty


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--format", "parquet"], "needs -o DIR"),
        (["--format", "csv", "--table", "fits"], "needs --model"),
        (["--format", "csv", "--table", "cost_categories"], "needs --model"),
        (["--format", "csv", "--params", "M", "-o", "x"], "--params applies"),
        (["--format", "csv", "-o", "x", "--where", "M=7"], "selects no run"),
        (["--format", "extrap", "--table", "runs"], "apply to --format csv and parquet"),
        (
            ["--format", "csv", "--table", "fits", "--model", "/nonexistent.json"],
            "cannot read model",
        ),
    ],
)
def test_db_export_tables_errors(pipe_db, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(["db", "export", str(pipe_db), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mprof: ") and message in err and "Traceback" not in err


def test_frames_errors(tmp_path):
    from mprof.errors import MprofError

    with pytest.raises(MprofError, match="no such file"):
        mf.runs(tmp_path / "missing.db")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(MprofError, match="bad.json"):
        mf.statistics(bad)


def test_graphframe_has_a_rank_level_and_metadata(pipe_db):
    run = load_profiles(pipe_db)[2]
    gf = mf.graphframe(pipe_db, run_id=run.id)
    df = gf.dataframe
    assert list(df.index.names) == ["node", "rank"]
    assert sorted(set(df.index.get_level_values("rank"))) == [0, 1]
    assert gf.metadata["run_id"] == run.id and gf.metadata["npes"] == 2
    assert gf.metadata["param.M"] == run.params["M"]
    assert gf.metadata["setting.agg_bytes"] == 1000
    idle = df[df["name"] == "idle"].reset_index()
    assert list(idle.sort_values("rank")["time"]) == pytest.approx(
        [pe.idle_time("cpu") for pe in run.pes]
    )
    # Hatchet's own operations on the rank level: drop it (mean over ranks), then the tree
    flat = gf.deepcopy()
    flat.drop_index_levels()
    assert list(flat.dataframe.index.names) == ["node"]
    assert "pipe" in flat.tree(metric_column="time (inc)")
    busy = df[df["name"] == "pipe"]["time"]
    assert float(flat.dataframe[flat.dataframe["name"] == "pipe"]["time"].iloc[0]) == pytest.approx(
        busy.mean()
    )
    # a run profile file gives the same frame
    path = Path(pipe_db).with_name("one.json")
    path.write_text(json.dumps(mf.load_runs(pipe_db, run.id)[0].to_document()))
    same = mf.graphframe(path)
    assert list(same.dataframe["time"]) == list(df["time"])


def test_graphframe_inclusive_root_is_the_total(tmp_path):
    """With measured time per access category, Hatchet's own update_inclusive_columns() gives
    the root the PEs' CPU time, each category its measured time, and the fibers counted once
    (an access category's are its enablers')."""
    doc = with_categories(make_run(npes=2))
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    run = mf.load_runs(path)[0]
    gf = mf.graphframe(path)
    gf.update_inclusive_columns()
    df = gf.dataframe.reset_index()
    root = df[df["node"].apply(lambda n: not n.parents)]
    assert float(root["time (inc)"].sum()) == pytest.approx(sum(pe.time("cpu") for pe in run.pes))
    access = df[df["type"] == "access"]
    consume = access[access["name"] == "pipe:consume"].sort_values("rank")
    assert list(consume["time"]) == pytest.approx([0.5 * pe.time("cpu") for pe in run.pes])
    enablers = df[
        df["node"].apply(lambda n: bool(n.parents) and n.parents[0].frame["name"] == "pipe:consume")
    ]
    assert consume["fibers"].sum() == 0 and enablers["fibers"].sum() > 0


def test_thicket_from_a_database(pipe_db):
    th = mf.thicket(pipe_db)
    assert len(th.profile) == 2 * len(M_VALUES)
    meta = th.metadata
    assert sorted(meta["run_id"]) == list(range(1, 2 * len(M_VALUES) + 1))
    assert sorted(set(meta["param.M"])) == list(M_VALUES)
    assert list(th.dataframe.index.names) == ["node", "profile"]
    # the PEs are summed: a run's idle time is its PEs' idle time
    run = load_profiles(pipe_db)[0]
    profile = meta.index[meta["run_id"] == run.id][0]
    df = th.dataframe.reset_index()
    idle = df[(df["name"] == "idle") & (df["profile"] == profile)]["time"]
    assert float(idle.iloc[0]) == pytest.approx(sum(pe.idle_time("cpu") for pe in run.pes))
    # Thicket's own grouping by a metadata column
    groups = th.groupby("param.M")
    assert len(groups) == len(M_VALUES)
    assert all(len(g.profile) == 2 for g in groups.values())
    one = mf.thicket(pipe_db, where=[_cond("M=200")], per_pe=True)
    assert len(one.profile) == 4 and sorted(one.metadata["rank"]) == [0, 0, 1, 1]

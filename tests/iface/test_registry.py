"""The interface registry (mprof.iface.registry): one search order, digests of .perf texts
that generated hooks carry and run profiles record."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from mprof.db.validate import ProfileError, parse_profile
from mprof.iface import codegen, load_interface, registry
from mprof.profile import RunProfile

REPO = Path(__file__).resolve().parents[2]
PIPE = REPO / "benchmarks" / "pipe" / "pipe.perf"


def copy(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "pipe.perf"
    target.write_text(text, encoding="utf-8")
    return target


def test_the_search_order_is_explicit_then_the_environment_then_the_source_tree(
    tmp_path, monkeypatch
):
    text = PIPE.read_text(encoding="utf-8")
    mine, env = copy(tmp_path / "mine", text), copy(tmp_path / "env", text)
    monkeypatch.setenv(registry.ENV, str(env.parent))
    assert registry.find("pipe", [mine.parent]) == mine
    assert registry.find("pipe") == env
    monkeypatch.delenv(registry.ENV)
    assert registry.find("pipe") == PIPE
    assert registry.find("no_such_module") is None
    assert registry.search_path([mine.parent])[0] == mine.parent
    assert registry.search_path()[-1] in registry.source_tree_dirs()


def test_the_digest_is_sha256_of_the_text_and_the_generated_hooks_carry_it():
    iface = load_interface(PIPE)
    assert iface.digest == hashlib.sha256(PIPE.read_bytes()).hexdigest()
    assert iface.digest == registry.digest(PIPE.read_text(encoding="utf-8"))
    source = codegen.render(iface)["pipe_perf.c"]
    assert source.count(f'"{iface.digest}"') == 1


def test_a_recorded_digest_finds_that_version_and_no_other(tmp_path, monkeypatch):
    text = PIPE.read_text(encoding="utf-8")
    edited = copy(tmp_path / "edited", text + "\n")
    original = copy(tmp_path / "original", text)
    monkeypatch.setenv(registry.ENV, os.pathsep.join([str(edited.parent), str(original.parent)]))
    wanted = registry.digest(text)
    assert registry.find("pipe") == edited  # first by name
    assert registry.find_by_digest("pipe", wanted) == original  # the recorded text
    assert registry.locate("pipe", {"pipe": wanted}) == original
    assert registry.locate("pipe", {}) == edited  # a run without digests: by name
    assert registry.find_by_digest("pipe", "0" * 64) is None


DOC = """{"schema": "mprof.run-profile", "schema_version": 2, "program": "p", "npes": 1,
 "interfaces": [{"name": "pipe", "digest": "%s"}],
 "pes": [{"pe": 0, "elapsed_s": 1.0, "idle_s": 0.0, "cpu_s": 1.0, "idle_cpu_s": 0.0,
          "objects": []}]}"""


def test_a_profile_carries_its_interfaces_digests_into_the_run_profile():
    doc = parse_profile(DOC % ("ab" * 32), "run.json")
    assert RunProfile.from_document(doc).interfaces == {"pipe": "ab" * 32}


def test_an_interface_entry_without_a_digest_is_an_error_at_its_place():
    text = DOC.replace(', "digest": "%s"', "")
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "run.json")
    assert str(err.value).startswith("run.json:2:")
    assert "interfaces[0]" in str(err.value) and "digest" in str(err.value)


def test_compile_keeps_the_text_in_the_store_under_its_digest(tmp_path, interface_store, capsys):
    from mprof.cli import main

    text = PIPE.read_text(encoding="utf-8")
    assert main(["iface", "compile", "-q", "-o", str(tmp_path), str(PIPE)]) == 0
    kept = interface_store / f"{registry.digest(text)}.perf"
    assert kept.read_text(encoding="utf-8") == text
    assert registry.stored(registry.digest(text)) == kept
    kept.write_text(text + "\n", encoding="utf-8")  # a damaged copy is not that text
    assert registry.stored(registry.digest(text)) is None


def test_a_store_that_cannot_be_written_is_a_warning_not_a_failed_build(
    tmp_path, monkeypatch, capsys
):
    from mprof.cli import main

    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(registry.STORE_ENV, str(blocker / "store"))
    assert main(["iface", "compile", "-q", "-o", str(tmp_path), str(PIPE)]) == 0
    err = capsys.readouterr().err
    assert "warning: interface" in err and "not kept in the store" in err
    assert (tmp_path / "pipe_perf.c").is_file()


def test_the_store_is_looked_up_first_by_digest(tmp_path, monkeypatch):
    text = PIPE.read_text(encoding="utf-8")
    kept = registry.remember(text)
    assert kept.parent == registry.store_dir() and registry.remember(text) == kept
    original = copy(tmp_path / "original", text)
    monkeypatch.setenv(registry.ENV, str(original.parent))
    assert registry.find_by_digest("pipe", registry.digest(text)) == kept


def test_runs_get_the_text_they_were_recorded_with_and_a_warning_when_it_changed(
    tmp_path, monkeypatch
):
    text = PIPE.read_text(encoding="utf-8") + "# as recorded\n"  # in no other file
    wanted = registry.digest(text)
    here = copy(tmp_path / "here", text)
    monkeypatch.setenv(registry.ENV, str(here.parent))
    # the file by name is the runs' text: it, and no warning
    assert registry.for_runs("pipe", [wanted, None]) == (here, [])
    # runs without digests: by name, as before profiles carried them
    assert registry.for_runs("pipe", [None, ""]) == (here, [])
    here.write_text(text + "# changed\n", encoding="utf-8")
    path, warnings = registry.for_runs("pipe", [wanted])
    assert path == here and len(warnings) == 1  # no copy of the runs' text anywhere
    assert "has changed since the runs were recorded" in warnings[0]
    assert "not in the interface store" in warnings[0]
    kept = registry.remember(text)
    path, warnings = registry.for_runs("pipe", [wanted])
    assert path == kept and "using the text they were recorded with" in warnings[0]
    path, warnings = registry.for_runs("pipe", [wanted, "0" * 64])
    assert path == here and "recorded with 2 versions of interface pipe" in warnings[0]


def test_the_fit_and_the_gate_use_the_runs_interface_text(tmp_path, monkeypatch):
    """The fit's autoload and the gate's statistic properties follow the digests the runs
    recorded: with the file on the search path changed since, the store's copy of the runs'
    text is used, and both say so."""
    import numpy as np

    from mprof.bench.synth import make_profile
    from mprof.db.store import ProfileDB
    from mprof.gate.data import statistic_properties
    from mprof.model.session import FitSession

    text = PIPE.read_text(encoding="utf-8") + "# as recorded\n"  # in no other file
    iface = load_interface(copy(tmp_path / "recorded", text))
    rng = np.random.default_rng(5)
    docs = []
    for r in range(8):
        objects = [
            [("pipe", {s.name: int(rng.integers(1, 100)) for s in iface.statistics})]
            for _ in range(2)
        ]
        doc = make_profile(
            "pipe", objects, [float(rng.uniform(1, 2)) for _ in range(2)], params={"run": r}
        )
        doc["interfaces"] = [{"name": "pipe", "digest": iface.digest}]
        docs.append((f"run{r}.json", doc))
    with ProfileDB(tmp_path / "fit.db") as db:
        db.import_documents(docs)
    changed = copy(tmp_path / "ifaces", text + "\n")
    (tmp_path / "recorded" / "pipe.perf").unlink()
    monkeypatch.setenv(registry.ENV, str(changed.parent))
    kept = registry.remember(text)

    session = FitSession(base_dir=tmp_path)
    session.add_database(str(tmp_path / "fit.db"))
    session._autoload()
    assert session.interfaces["pipe"].path == str(kept.resolve())
    assert any("has changed since the runs were recorded" in w for w in session.warnings)

    props = statistic_properties({"pipe"}, (), {"pipe": {iface.digest}})
    assert props.sources["pipe"] == str(kept)
    assert any("has changed since the runs were recorded" in w for w in props.warnings)
    kept.unlink()  # no copy: the file found by name, with the warning that it may differ
    props = statistic_properties({"pipe"}, (), {"pipe": {iface.digest}})
    assert props.sources["pipe"] == str(changed)
    assert any("may not be the runs'" in w for w in props.warnings)

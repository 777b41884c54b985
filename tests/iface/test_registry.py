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
        tmp_path, monkeypatch):
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

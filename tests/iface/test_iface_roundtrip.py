"""The three reference interfaces parse, print back, compile, and keep the same model."""

import json
import re

import pytest

from iface_helpers import INTERFACES

from mprof.cli import main
from mprof.iface import load_interface, parse_interface
from mprof.iface.codegen import render
from mprof.iface.formatter import format_interface


def test_reference_models():
    pipe = load_interface(INTERFACES["pipe"])
    assert (pipe.name, pipe.description) == ("pipe", "PIPE computational kernel")
    assert [s.name for s in pipe.statistics] == ["P", "T", "N", "M"]
    assert pipe.parameter_names() == ["pipe:P", "pipe:Comp"]
    assert [a.name for a in pipe.accesses] == ["consume", "produce"]
    assert pipe.term_values({"P": 1, "T": 3, "N": 8, "M": 5}) == {"P": 1.0, "Comp": 15.0}

    graph = load_interface(INTERFACES["graph"])
    assert graph.parameter_names() == ["graph:P", "graph:Op", "graph:Data"]
    assert [a.name for a in graph.accesses] == ["ENQ", "DEQ"]
    assert graph.term("Op").category == "OP"
    assert graph.term("P").is_statistic and graph.term("P").category == "STARTUP"

    rts = load_interface(INTERFACES["rts"])
    assert [s.name for s in rts.statistics] == [
        "P", "Sched", "ThreadAlloc", "ThreadEnable", "ThreadDisp", "ThreadContext",
        "IdleCycle", "MsgSent", "FlowMsgSent", "ByteSent", "FastMsgSent", "RemoteOp",
        "ByteCopy", "IdleNs", "ThreadArrived", "MsgAlloc", "ByteRecv", "Wakes", "IdleCpuNs",
        "LocalOp", "ByteAlloc", "FlowWait", "ThreadDirect", "AggFull", "AggHalf", "AggAged",
        "AggFed", "AggDrain", "AggOrder", "AggTaken", "ChanNotify", "ChanDrain", "ThreadCarried",
        "RecordFwd",
    ]  # fmt: skip
    assert {c.name: c.terms for c in rts.categories} == {
        "STARTUP": ["P"],
        "THREAD": ["Thread", "RemoteThread", "DirectThread", "ThreadContext"],
        "IDLE": ["Idle", "IdleCpu"],
        "COMM_ALPHA": ["RemoteOp", "Msg", "Wake", "Notify", "Drain", "Forward"],
        "COMM_BETA": ["ByteSent", "ByteRecv", "ByteAlloc"],
        "COMM_LOCAL": ["LocalOp", "ByteCopy"],
    }
    assert rts.accesses == []
    assert all(s.type == "u64" for s in rts.statistics)


def test_source_roundtrip(interface_path):
    first = load_interface(interface_path)
    text = format_interface(first)
    second = parse_interface(text, "printed.perf")
    assert second.to_dict() == first.to_dict()
    assert [t.expr.key() for t in second.terms] == [t.expr.key() for t in first.terms]
    assert format_interface(second) == text  # printing is a fixed point


def test_show_json_roundtrip(interface_path, capsys):
    assert main(["iface", "show", "--json", str(interface_path)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == load_interface(interface_path).to_dict()


def test_show_tables(interface_path, capsys):
    iface = load_interface(interface_path)
    assert main(["iface", "show", str(interface_path)]) == 0
    out = capsys.readouterr().out
    for name in iface.parameter_names() + [c.name for c in iface.categories]:
        assert name in out


def test_compiled_header_matches_model(interface_path):
    """The generated C declares exactly the model's statistics, terms, categories, accesses."""
    iface = load_interface(interface_path)
    files = render(iface)
    m, big = iface.name, iface.name.upper()
    header = files[f"{m}_perf.h"]
    struct = re.search(r"typedef struct \{(.*?)\} " + m + "_stats_t;", header, re.S).group(1)
    fields = re.findall(r"^\s+(\w+) (\w+);", struct, re.M)
    ctype = {"u64": "uint64_t", "i64": "int64_t", "double": "double"}
    assert fields == [(ctype[s.type], s.name) for s in iface.statistics]
    terms = re.findall(rf"{big}_TERM_(\w+) = (\d+)", header)
    assert terms == [(t.name, str(i)) for i, t in enumerate(iface.terms)]
    assert re.findall(rf"double {m}_cost_(\w+)\(", header) == [c.name for c in iface.categories]
    assert re.findall(rf"{big}_ACCESS_(\w+) = ", header) == [a.name for a in iface.accesses]
    source = files[f"{m}_perf.c"]
    # {name, type, PAPI event or NULL} (docs/papi.md)
    described = re.findall(r'\{"(\w+)", MP_STAT_(\w+), (?:NULL|"[^"]+")\}', source)
    tag = {"u64": "U64", "i64": "I64", "double": "F64"}
    assert described == [(s.name, tag[s.type]) for s in iface.statistics]
    for a in iface.accesses:
        assert f'"{a.name}",' in source


def test_cli_compile_and_check(tmp_path, capsys):
    paths = [str(p) for p in INTERFACES.values()]
    assert main(["iface", "check", *paths]) == 0
    assert main(["iface", "compile", "-q", "-o", str(tmp_path / "out"), *paths]) == 0
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == sorted(f"{m}_perf.{ext}" for m in INTERFACES for ext in "ch")


def test_cli_reports_errors(tmp_path, capsys):
    bad = tmp_path / "bad.perf"
    bad.write_text("interface bad -- x\nstatistics\n  A -- a\ncategories\n  C -- c\n  { B }\n")
    assert main(["iface", "check", str(INTERFACES["pipe"]), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:6:5: unknown term 'B' in category 'C'" in err
    assert main(["iface", "compile", "-o", str(tmp_path), str(bad)]) == 2
    assert main(["iface", "show", str(tmp_path / "missing.perf")]) == 2
    assert "cannot read interface" in capsys.readouterr().err


def test_compile_rejects_clashing_modules(tmp_path, capsys):
    text = INTERFACES["pipe"].read_text()
    other = tmp_path / "PIPE.perf"
    other.write_text(text.replace("interface pipe", "interface PIPE"))
    assert main(["iface", "compile", "-o", str(tmp_path), str(INTERFACES["pipe"]), str(other)]) == 2
    assert "same hook names" in capsys.readouterr().err


def test_hook_cost_benchmark_runs():
    """The benchmark builds and reports that a hook costs what a plain increment costs."""
    import subprocess
    import sys

    from iface_helpers import ROOT
    from tooling import require_tool

    require_tool("valgrind")
    require_tool("gcc")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "iface" / "hook_cost.py"), "-n", "2000",
         "--cc", "gcc"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["hook_instructions"] > 2000
    assert result["ratio"] <= 1.05


def _perf(tmp_path, module, extra=""):
    path = tmp_path / f"{module}.perf"
    path.write_text(f"interface {module} -- m\nstatistics\n  S -- s\n{extra}")
    return path


@pytest.mark.parametrize(
    "extra, second, line, fragment",
    [
        # a's term b_stats_create: a_term_b_stats_create, which module a_term_b's API declares
        (
            "terms\n  b_stats_create -- t\n    { b_stats_create = S * 2; }\ncategories\n  C -- c\n"
            "    { b_stats_create }\n",
            "a_term_b",
            5,
            "term 'b_stats_create' of interface 'a' generates the C name a_term_b_stats_create",
        ),
        # a's access NSTATS: A_ACCESS_NSTATS, module a_access's statistic count macro
        (
            "categories\n  C -- c\n    { S }\naccesses\n  NSTATS -- n\n",
            "a_access",
            8,
            "access 'NSTATS' of interface 'a' generates the C name A_ACCESS_NSTATS",
        ),
    ],
)
def test_compile_rejects_modules_whose_c_names_collide(
    tmp_path, capsys, extra, second, line, fragment
):
    """Including both generated headers would not compile: refused before anything is
    written, at the declaration that makes the name or at the other module (the later one)."""
    first = _perf(tmp_path, "a", extra)
    other = _perf(tmp_path, second, "categories\n  C -- c\n    { S }\n")
    out = tmp_path / "out"
    assert main(["iface", "compile", "-o", str(out), str(other), str(first)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"mprof: {first}:{line}:3: {fragment}, which the hook API of "
        f"interface '{second}' ({other}) generates too"
    ), err
    assert main(["iface", "compile", "-o", str(out), str(first), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mprof: {other}:1:1: the hook API of interface '{second}' "), err
    assert not out.exists() or not any(out.iterdir())
    for each in (first, other):  # compiled apart, each is fine
        assert main(["iface", "compile", "-q", "-o", str(out), str(each)]) == 0


def test_compile_writes_nothing_when_one_output_is_an_input(tmp_path, capsys, monkeypatch):
    """A generated file that would replace one of the interfaces compiled leaves every other
    output unwritten too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipe.perf").write_text(INTERFACES["pipe"].read_text())
    # an interface saved under the name of pipe's generated source
    _perf(tmp_path, "q", "categories\n  C -- c\n    { S }\n").rename(tmp_path / "pipe_perf.c")
    assert main(["iface", "compile", "pipe_perf.c", "pipe.perf"]) == 2
    assert "cannot write pipe_perf.c: it is an input of this command" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.perf", "pipe_perf.c"]

"""Model files, per-category costs with bands, and the C export."""

import json
import subprocess

import numpy as np
import pytest
from model_helpers import BASE_SCRIPT, GRAPH_PERF, PIPE_PERF, ROOT, write_script
from tooling import require_tool

from mprof.cli import main
from mprof.errors import MprofError
from mprof.model import load_model
from mprof.model.script import ModelingScript

STATS = {
    "pipe": {"P": 1, "T": 50, "N": 5, "M": 700},
    "graph": {
        "P": 1,
        "EltSize": 100,
        "NOp": 900,
        "NBlock": 12,
        "NMsg": 40,
        "EnqSize": 9000,
        "DeqSize": 8000,
    },
}


@pytest.fixture
def model_path(tmp_path, pipe_dbs):
    ModelingScript(
        write_script(tmp_path, BASE_SCRIPT + "SaveModel m.json\n"), warn=lambda w: None
    ).run()
    return tmp_path / "m.json"


def test_model_file_contents(model_path):
    data = json.loads(model_path.read_text())
    assert data["schema"] == "mprof.model" and data["version"] == 2
    assert data["fitted"] == ["pipe:Comp", "graph:P", "graph:Op", "graph:Data"]
    assert np.array(data["covariance"]).shape == (4, 4)
    assert data["covariance_parameters"] == data["fitted"]
    # self-contained: the interfaces' text is in the file
    assert "interface graph" in data["interfaces"]["graph"]["source"]
    assert data["interfaces"]["graph"]["categories"] == {
        "STARTUP": ["P"],
        "OP": ["Op"],
        "DATA": ["Data"],
    }
    assert data["quality"]["rank"] == 4 and data["quality"]["dof"] > 0
    assert data["settings"]["granularity"] == "pe" and data["ignored"] == ["pipe:P"]


def category_costs(model, module, stats):
    terms = {f"{module}:{t}": v for t, v in model.term_values(module, stats).items()}
    return model.price_categories(module, terms)


def test_category_costs_and_bands(model_path, tmp_path):
    model = load_model(model_path)
    costs = category_costs(model, "graph", STATS["graph"])
    v = model.values
    assert costs["OP"].seconds == pytest.approx(v["graph:Op"] * (900 + 12 + 40))
    assert costs["DATA"].seconds == pytest.approx(v["graph:Data"] * 17000)
    assert costs["STARTUP"].seconds == pytest.approx(v["graph:P"])
    assert "STARTUP" not in category_costs(model, "pipe", STATS["pipe"])  # only ignored terms
    i = model.cov_names.index("graph:Op")
    expected = np.sqrt(model.covariance[i, i]) * 952 * model.t_quantile()
    assert costs["OP"].halfwidth(model.t_quantile()) == pytest.approx(expected)
    assert expected > 0
    # the interface text travels with the model: pricing works with the .perf files gone
    moved = tmp_path / "elsewhere.json"
    data = json.loads(model_path.read_text())
    for info in data["interfaces"].values():
        info["path"] = info["relative_path"] = "/nonexistent/x.perf"
    moved.write_text(json.dumps(data))
    again = category_costs(load_model(moved), "graph", STATS["graph"])
    assert again["OP"].seconds == costs["OP"].seconds


def test_bad_model_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    with pytest.raises(MprofError, match="not an mprof model"):
        load_model(bad)
    bad.write_text('{"schema": "mprof.model", "version": 9}')
    with pytest.raises(MprofError, match="version 9"):
        load_model(bad)
    bad.write_text('{"schema": "mprof.model", "ver')
    with pytest.raises(MprofError, match="not valid JSON"):
        load_model(bad)
    # Python's own limits and decoder, in the file's terms
    bad.write_text('{"schema": "mprof.model",\n "version": ' + "9" * 5000 + "}")
    with pytest.raises(MprofError, match=r"bad\.json:2:13: an integer of 5000 digits is no"):
        load_model(bad)
    bad.write_bytes(b'{"schema":\n  "mprof\xff.model"}')
    with pytest.raises(MprofError, match=r"bad\.json:2:9: not valid UTF-8 \(byte 0xff"):
        load_model(bad)
    bad.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(MprofError, match=r"bad\.json: not a model file: JSON nested too deeply$"):
        load_model(bad)


def test_export_c_matches_python(model_path, tmp_path):
    require_tool("cc")
    out = tmp_path / "c"
    assert main(["model", "export-c", str(model_path), "-o", str(out)]) == 0
    model = load_model(model_path)
    # The generated hooks' headers first, so the record-based variants are compiled too.
    assert main(["iface", "compile", "-q", "-o", str(out), str(PIPE_PERF), str(GRAPH_PERF)]) == 0
    lines = [
        "#include <stdio.h>",
        '#include "pipe_perf.h"',
        '#include "graph_perf.h"',
        '#include "mpm_model.h"',
        "int main(void) {",
    ]
    for module, stats in STATS.items():
        names = model.interfaces[module].statistics
        values = ", ".join(repr(float(stats.get(s, 0))) for s in names)
        up, fn = f"MPM_{module.upper()}", f"mpm_{module}"
        lines += [
            f"  {{ double s[] = {{{values}}}; double out[{up}_NCATS];",
            f"    {fn}_costs(s, out);",
            f"    for (int i = 0; i < {up}_NCATS; i++)",
            f'      printf("{module} %s %.17g\\n", {fn}_category_names[i], out[i]); }}',
        ]
        fields = ", ".join(f".{k} = {v}" for k, v in stats.items())
        lines += [
            f"  {{ {module}_stats_t rec = {{{fields}}};",
            f"    double a[{up}_NCATS], b[{up}_NCATS], s[] = {{{values}}};",
            f"    double ta = {fn}_costs_record(&rec, a), tb = {fn}_costs(s, b);",
            f"    for (int i = 0; i < {up}_NCATS; i++) if (a[i] != b[i]) return 1;",
            "    if (ta != tb) return 1; }",
            f"  {{ double s[] = {{{values}}};",
            "    double f[MPM_NPARAMS > 0 ? MPM_NPARAMS : 1] = {0};",
            f"    {fn}_terms(s, f);",
            f'    printf("{module} BAND %.17g\\n", mpm_halfwidth(f)); }}',
        ]
    lines += ["  return 0;", "}"]
    (out / "main.c").write_text("\n".join(lines) + "\n")
    exe = tmp_path / "costs"
    subprocess.run(
        [
            "cc",
            "-std=c11",
            "-Wall",
            "-Werror",
            f"-I{ROOT / 'runtime/include'}",
            "-o",
            str(exe),
            str(out / "main.c"),
            str(out / "mpm_model.c"),
            "-lm",
        ],
        check=True,
    )
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    got = {(m, c): float(x) for m, c, x in (line.split() for line in printed.splitlines())}
    q = model.t_quantile()
    for module, stats in STATS.items():
        for cat, est in category_costs(model, module, stats).items():
            assert got[(module, cat)] == pytest.approx(est.seconds, rel=1e-12, abs=1e-300)
        terms = {f"{module}:{t}": v for t, v in model.term_values(module, stats).items()}
        band = model.price(terms).halfwidth(q)
        assert got[(module, "BAND")] == pytest.approx(band, rel=1e-9, abs=1e-300)


def test_export_c_refuses_a_category_named_like_a_module_function(model_path, tmp_path, capsys):
    """A category `costs` would declare mpm_pipe_costs twice: refused, nothing written."""
    data = json.loads(model_path.read_text())
    pipe = data["interfaces"]["pipe"]
    old = next(iter(pipe["categories"]))
    pipe["source"] = pipe["source"].replace(f"  {old} ", "  costs ")
    pipe["categories"] = {("costs" if k == old else k): v for k, v in pipe["categories"].items()}
    if "category_descriptions" in pipe:
        pipe["category_descriptions"] = {
            ("costs" if k == old else k): v for k, v in pipe["category_descriptions"].items()
        }
    bad = tmp_path / "costs.json"
    bad.write_text(json.dumps(data))
    assert main(["model", "export-c", str(bad), "-o", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "category 'costs' cannot be exported to C: its function mpm_pipe_costs" in err, err
    assert not (tmp_path / "c" / "mpm_model.h").exists()


def test_export_c_with_a_prefix_too_long_for_a_file_name(model_path, tmp_path, capsys):
    assert (
        main(
            ["model", "export-c", str(model_path), "-o", str(tmp_path / "c"), "--prefix", "p" * 300]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "cannot write C file" in err and "File name too long" in err, err
    assert "Traceback" not in err

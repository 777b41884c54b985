"""The C Cost Profile helper (mprof/report/c) linked with `mprof model export-c` output: a
program prints its own Cost Profile at exit when MPROF_REPORT=1, with the numbers
`mprof report` computes from the same statistics."""

import os
import re
import shutil
import subprocess

import pytest
from report_helpers import PERFS, make_model, make_run, pe_stats

from mprof.cli import main
from mprof.report.build import build_report

NPES = 4

PROGRAM = r"""
#include "rts_perf.h"
#include "graph_perf.h"
#include "pipe_perf.h"
#include "mpm_model.h"
#include "mprof_report.h"

#include <pthread.h>
#include <string.h>

static void *pe_main(void *arg)
{
    int pe = (int)(long)arg;
    rts_stats_t rts = {0};
    graph_stats_t graph = {0};
    pipe_stats_t pipe = {0};
@FILL@
    MPROF_REPORT_RECORD(mpm_rts, MPM_RTS, 0, "rts", &rts);
    MPROF_REPORT_RECORD(mpm_graph, MPM_GRAPH, 1, "graph", &graph);
    MPROF_REPORT_RECORD(mpm_pipe, MPM_PIPE, 3, "pipe", &pipe);
    mprof_report_add_time(elapsed[pe]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "bands") == 0)
        mprof_report_bands(mpm_halfwidth, MPM_NPARAMS);
    mprof_report_atexit();
    pthread_t t[@NPES@];
    for (long pe = 0; pe < @NPES@; pe++)
        pthread_create(&t[pe], NULL, pe_main, (void *)pe);
    for (int pe = 0; pe < @NPES@; pe++)
        pthread_join(t[pe], NULL);
    return 0;
}
"""


def c_source(doc):
    fill = []
    for pe in range(NPES):
        rts, graph, pipe = pe_stats(pe)
        sets = [f"rts.{k} = {v};" for k, v in rts.items()]
        sets += [f"graph.{k} = {v};" for k, v in graph.items()]
        sets += [f"pipe.{k} = {v};" for k, v in pipe.items()]
        fill.append(f"    if (pe == {pe}) {{ " + " ".join(sets) + " }")
    times = ", ".join(repr(p["elapsed_s"]) for p in doc["pes"])
    return (
        "static const double elapsed[] = {"
        + times
        + "};\n"
        + PROGRAM.replace("@FILL@", "\n".join(fill)).replace("@NPES@", str(NPES))
    )


def numbers(line):
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+", line)]


@pytest.mark.slow
def test_program_prints_its_own_cost_profile(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("a C compiler is needed (scripts/bootstrap.sh installs it)")
    model = make_model()
    model_path = tmp_path / "pipe.model.json"
    model.save(model_path)
    gen = tmp_path / "gen"
    assert main(["model", "export-c", str(model_path), "-o", str(gen)]) == 0
    assert main(["iface", "compile", "-q", "-o", str(gen), *map(str, PERFS.values())]) == 0
    assert main(["report", "--c-helper", str(gen)]) == 0
    doc = make_run(NPES, extra_module=False)
    (tmp_path / "prog.c").write_text(c_source(doc))
    exe = tmp_path / "prog"
    proc = subprocess.run(
        [
            cc,
            "-std=c11",
            "-O1",
            "-Wall",
            "-Werror",
            "-DMPROF_DISABLE",
            f"-I{gen}",
            str(tmp_path / "prog.c"),
            str(gen / "mpm_model.c"),
            str(gen / "mprof_report.c"),
            "-o",
            str(exe),
            "-lpthread",
            "-lm",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr

    quiet = subprocess.run(
        [str(exe)], capture_output=True, text=True, env={**os.environ, "MPROF_REPORT": "0"}
    )
    assert quiet.returncode == 0 and quiet.stdout == ""
    run = subprocess.run(
        [str(exe)], capture_output=True, text=True, env={**os.environ, "MPROF_REPORT": "1"}
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "*** Cost Profile ***"

    report = build_report(doc, model)
    by_id = {oc.id: oc for oc in report.objects}
    c_lines = {int(line.split(":")[0][3:]): line for line in lines[1:-1]}
    assert set(c_lines) == {0, 1, 3}
    for oid, line in c_lines.items():
        got = dict(re.findall(r"(\w+)= *([\d.]+)", line))
        for c in by_id[oid].categories:  # C also prints the all-ignored categories, as 0
            assert float(got[c.name]) == pytest.approx(c.seconds, abs=1e-3), (oid, c.name)
    model_c, total_c = numbers(lines[-1])
    assert lines[-1].startswith("Time: Model=")
    assert model_c == pytest.approx(report.model_total, abs=1e-3)
    assert total_c == pytest.approx(report.measured_total, abs=1e-3)
    # Same shape as the Python text report: where no category is all-ignored (graph) the lines
    # are identical, and so is the Time line.
    from mprof.report.text import format_text

    text = format_text(report).splitlines()
    assert c_lines[1] in text
    assert c_lines[3] == "Id 3: STARTUP=  0.000 COMP=  1.800"  # pipe:P ignored
    assert lines[-1] in text

    # with bands: the model total's half width from the parameters' joint covariance, as
    # `mprof report` computes it (before it adds the fit's residual scatter)
    banded = subprocess.run(
        [str(exe), "bands"], capture_output=True, text=True, env={**os.environ, "MPROF_REPORT": "1"}
    )
    assert banded.returncode == 0, banded.stderr
    blines = banded.stdout.splitlines()
    assert blines[:-1] == lines and blines[-1].startswith("Model band (90 %): +-")
    assert report.param_halfwidth > 0.01, report.param_halfwidth  # printed to 3 decimals
    assert numbers(blines[-1])[0] == pytest.approx(report.param_halfwidth, rel=2e-3, abs=2e-3)

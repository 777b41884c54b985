"""CUBE4 experiment folders, one per run: `<DIR>/mprof.npes2.M2000.N5.r1/profile.cubex`.

The folder names carry the parameters the way Score-P experiments do, so Extra-P's `--cube`
reader (through pycubexr) takes the parameters from them.  No CUBE writer exists on PyPI and
CubeLib is not packaged for Debian 12, so this module writes the format itself: a `.cubex` file
is an uncompressed tar archive holding `anchor.xml` (metrics, regions, call tree, system tree)
and per metric an index file (which call-tree nodes have data) and a data file (one value per
node and location, nodes in the order of the index).  All metrics are exclusive; locations are
the PEs.  In CUBE every metric has a value at every node: metrics a node does not measure
(fibers of the idle node) are written as 0, as Score-P writes visits of regions never entered.

The values are the call tree's exclusive ones (calltree.exclusive_values): counted once, with
the measured CPU time per access category where the run has it."""

from __future__ import annotations

import io
import re
import struct
import tarfile
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from ..errors import MprofError
from ..exports.calltree import (
    DESCRIPTIONS,
    METRICS,
    UNITS,
    Node,
    exclusive_values,
    model_params,
    numeric_params,
    run_tree,
)
from ..files import make_folder, write_file
from ..profile import RunProfile

_NAME = re.compile(r"^[A-Za-z_][A-Za-z_]*$")


def folder_name(coord: dict[str, float], repetition: int) -> str:
    """`mprof.npes2.M2000.r1`: Extra-P splits names from values at digits, so names must not
    contain digits or dots, and values must be non-negative numbers."""
    parts = []
    for name, value in coord.items():
        if not _NAME.match(name) or name.startswith("r"):
            raise MprofError(
                f"parameter '{name}' cannot be named in a CUBE experiment folder "
                "(letters and underscores only, not starting with 'r'); "
                "leave it out with --params"
            )
        if value < 0:
            raise MprofError(
                f"parameter {name}={value}: a CUBE folder name holds no negative value"
            )
        parts.append(f"{name}{value:g}")
    return "mprof." + ".".join(parts) + f".r{repetition}"


def write_cube_experiment(
    runs: list[RunProfile], outdir: Path, measure: str, params: list[str] | None = None
) -> list[Path]:
    names, _ = model_params(runs, params)
    if "npes" in names:  # first: no parameter name may start a ".r" (Extra-P's repetition)
        names = ["npes"] + [n for n in names if n != "npes"]
    make_folder(outdir)
    written, reps = [], {}
    for run in runs:
        values = numeric_params(run)
        coord = {n: values[n] for n in names}
        key = tuple(coord.items())
        reps[key] = reps.get(key, 0) + 1
        folder = outdir / folder_name(coord, reps[key])
        make_folder(folder)
        path = folder / "profile.cubex"
        write_file(
            path,
            cubex_bytes(run_tree(run, measure), len(run.pes), run, measure),
            what="CUBE profile",
        )
        written.append(path)
    return written


def cubex_bytes(tree: Node, npes: int, run: RunProfile, measure: str = "cpu") -> bytes:
    values = exclusive_values(tree, run, measure)
    nodes = [node for _, node in tree.walk()]  # pre-order: CUBE's exclusive enumeration
    files = {"anchor.xml": anchor_xml(tree, nodes, npes, run).encode()}
    index = (
        b"CUBEX.INDEX"
        + struct.pack("<i", 1)
        + struct.pack("<h", 0)
        + b"\x00"
        + struct.pack("<i", len(nodes))
        + struct.pack(f"<{len(nodes)}i", *range(len(nodes)))
    )
    for mid, metric in enumerate(METRICS):
        data = np.array([values[id(node)][metric] for node in nodes], dtype="<f8")
        files[f"{mid}.index"] = index
        files[f"{mid}.data"] = b"CUBEX.DATA" + data.tobytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def anchor_xml(tree: Node, nodes: list[Node], npes: int, run: RunProfile) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<cube version="4.5">',
        '<attr key="CUBE_CT_AGGR" value="SUM"/>',
        f'<attr key="mprof::program" value="{escape(run.program, {chr(34): "&quot;"})}"/>',
        "<doc><mirrors></mirrors></doc>",
        "<metrics>",
    ]
    for mid, metric in enumerate(METRICS):
        out.append(
            f'<metric id="{mid}" type="EXCLUSIVE"><disp_name>{metric}</disp_name>'
            f"<uniq_name>{metric}</uniq_name><dtype>DOUBLE</dtype>"
            f"<uom>{UNITS[metric]}</uom><url></url>"
            f"<descr>{escape(DESCRIPTIONS[metric])}</descr></metric>"
        )
    out.append("</metrics>")
    out.append("<program>")
    regions: dict[str, int] = {}
    for node in nodes:
        if node.name not in regions:
            rid = regions[node.name] = len(regions)
            out.append(
                f'<region id="{rid}" mod="" begin="-1" end="-1">'
                f"<name>{escape(node.name)}</name>"
                f"<mangled_name>{escape(node.name)}</mangled_name>"
                f"<paradigm>mprof</paradigm><role>{node.kind}</role><url></url>"
                f"<descr></descr></region>"
            )
    ids = {id(node): i for i, node in enumerate(nodes)}

    def cnode(node: Node) -> str:
        inner = "".join(cnode(c) for c in node.children)
        return f'<cnode id="{ids[id(node)]}" calleeId="{regions[node.name]}">{inner}</cnode>'

    out.append(cnode(tree))
    out.append("</program>")
    out.append(
        '<system><systemtreenode Id="0" class="machine"><name>machine</name><class>machine</class>'
    )
    for pe in range(npes):
        out.append(
            f'<locationgroup Id="{pe}"><name>PE {pe}</name><rank>{pe}</rank>'
            f'<type>process</type><location Id="{pe}"><name>PE {pe}</name>'
            f"<rank>0</rank><type>thread</type></location></locationgroup>"
        )
    out.append("</systemtreenode></system></cube>")
    return "\n".join(out) + "\n"

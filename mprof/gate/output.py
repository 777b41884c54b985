"""Gate reports: terminal table (rich), Markdown (CI job summaries), JUnit XML, JSON."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..files import write_file
from ..report.jsonout import dumps
from .evaluate import ALLOWED, BEHAVIOUR, INCONCLUSIVE, INFO, PASS, REGRESSION, GateReport, Unit

STYLES = {
    REGRESSION: "bold red",
    BEHAVIOUR: "bold magenta",
    INCONCLUSIVE: "yellow",
    ALLOWED: "cyan",
    INFO: "dim",
    PASS: "green",
}


def _pct(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    text = f"{100 * x:+.1f}%"
    return "+0.0%" if text == "-0.0%" else text  # no change shown with a sign it has not


def _num(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.4g}"


def _p(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.2g}" if x >= 1e-4 else f"{x:.1e}"


def cells(u: Unit) -> dict[str, str]:
    c = u.comparison
    if c is None:
        return {
            "baseline": u.baseline_text or "-",
            "candidate": u.candidate_text or "-",
            "change": "-",
            "interval": "-",
            "p": "-",
            "n": "-",
        }
    n = (
        f"{c.n_baseline}/{c.n_candidate}"
        if c.method != "coefficient"
        else (f"dof {c.n_baseline}/{c.n_candidate}")
    )
    # no bounds (too few runs) and no test are "-", never a [-inf, +inf] they did not give
    return {
        "baseline": _num(c.baseline),
        "candidate": _num(c.candidate),
        "change": _pct(c.change),
        "interval": f"[{_pct(c.low)}, {_pct(c.high)}]" if c.bounded else "-",
        "p": _p(u.p_adjusted) if c.tested else "-",
        "n": n,
    }


def change_text(u: Unit) -> str:
    """The change and its bounds in a sentence (JUnit messages, pytest failures)."""
    c = cells(u)
    return f"{c['change']} {c['interval'] if u.comparison.bounded else '(no bounds)'}"


# Column headers and what they mean (terminal caption, Markdown footnotes, docs/gate.md).
COLUMNS = (
    "verdict",
    "unit",
    "baseline¹",
    "candidate¹",
    "change²",
    "bounds³",
    "tol",
    "p adj⁴",
    "n",
    "note",
)


def legend(report: GateReport) -> list[str]:
    conf = f"{100 * (1 - report.config.alpha):g} %"
    return [
        "¹ median of the runs (time, cost); the exact value (stat); the fitted value (fit).",
        "² estimated relative change candidate/baseline - 1: for runs, the Hodges-Lehmann "
        "estimate (median of all pairwise log-ratios), which need not equal the ratio of the "
        "two medians; for exact and fitted values, their ratio.",
        f"³ one-sided {conf} bounds of the change (at the default alpha): REGRESSION needs the "
        "change shown above tol, PASS needs the upper bound at most tol; - where the runs give "
        "none.",
        '⁴ p-value of "change > tol", corrected for the number of units; - where no test '
        "was made (fewer than 2 runs on a side): INCONCLUSIVE; n: runs per side (dof of the "
        "fits).",
    ]


def summary_line(report: GateReport) -> str:
    counts = report.counts()
    parts = [f"{counts[v]} {v.lower()}" for v in counts if counts[v]]
    return f"mprof gate: {report.status} ({', '.join(parts) or 'no units'})"


def print_terminal(
    report: GateReport, console: Console | None = None, *, show_pass: bool = False
) -> None:
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(console.width, 160))  # CI logs: do not squeeze
    table = Table(
        title="mprof gate: candidate vs baseline",
        show_lines=False,
        caption="\n".join(legend(report)),
        caption_justify="left",
    )
    for name in COLUMNS:
        kw = (
            {"no_wrap": True}
            if name == "verdict"
            else {"overflow": "fold"}
            if name in ("unit", "note")
            else {"justify": "right"}
        )
        table.add_column(name, **kw)
    hidden = 0
    for u in report.sorted_units():
        if u.verdict == PASS and not show_pass:
            hidden += 1
            continue
        c = cells(u)
        table.add_row(
            f"[{STYLES[u.verdict]}]{u.verdict}[/]",
            u.id,
            c["baseline"],
            c["candidate"],
            c["change"],
            c["interval"],
            f"{100 * u.tolerance:g}%",
            c["p"],
            c["n"],
            u.note,
        )
    if table.row_count:
        console.print(table)
    if hidden:
        console.print(f"{hidden} unit(s) PASS (--show-pass lists them)")
    for text in report.warnings:
        console.print(f"[yellow]warning:[/] {text}", highlight=False, soft_wrap=True)
    if report.not_compared:
        console.print(not_compared_line(report), highlight=False, soft_wrap=True)
    if report.unused_allow:
        console.print(
            "allow-list entries matching no unit: " + ", ".join(report.unused_allow),
            highlight=False,
        )
    if report.cross_machine:
        console.print("[yellow]cross-machine comparison: every verdict is informational[/]")
    style = {"PASS": "bold green", "FAIL": "bold red", "INCONCLUSIVE": "bold yellow"}
    console.print(f"[{style[report.status]}]{summary_line(report)}[/]", highlight=False)


def not_compared_line(report: GateReport) -> str:
    by_reason: dict[str, list[str]] = {}
    for name, reason in sorted(report.not_compared.items()):
        by_reason.setdefault(reason, []).append(name)
    return "not compared (priced, not measured, on both sides): " + "; ".join(
        f"{', '.join(names)} ({reason})" for reason, names in by_reason.items()
    )


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: GateReport, *, show_pass: bool = False) -> str:
    counts = report.counts()
    icon = {"PASS": ":white_check_mark:", "FAIL": ":x:", "INCONCLUSIVE": ":warning:"}
    lines = [f"## mprof gate: {icon[report.status]} {report.status}", ""]
    lines.append(
        " · ".join(f"**{counts[v]}** {v.lower()}" for v in counts if counts[v]) or "no units"
    )
    lines.append("")
    lines.append(
        f"Baseline `{report.baseline.database}` ({len(report.baseline.runs)} runs), "
        f"candidate `{report.candidate.database}` ({len(report.candidate.runs)} runs); "
        f"tolerance {100 * report.config.tolerance:g} %, alpha "
        f"{report.config.alpha:g}, {report.config.correction} correction."
    )
    if report.cross_machine:
        lines += ["", "> **Cross-machine comparison:** every verdict is informational."]
    lines.append("")
    shown = [u for u in report.sorted_units() if show_pass or u.verdict != PASS]
    if shown:
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
        for u in shown:
            c = cells(u)
            lines.append(
                "| "
                + " | ".join(
                    _md_escape(x)
                    for x in (
                        f"**{u.verdict}**" if u.verdict in (REGRESSION, BEHAVIOUR) else u.verdict,
                        f"`{u.id}`",
                        c["baseline"],
                        c["candidate"],
                        c["change"],
                        c["interval"],
                        f"{100 * u.tolerance:g}%",
                        c["p"],
                        c["n"],
                        u.note,
                    )
                )
                + " |"
            )
        lines += [""] + [f"<sub>{text}</sub><br>" for text in legend(report)]
    hidden = len(report.units) - len(shown)
    if hidden:
        lines += ["", f"{hidden} unit(s) pass."]
    if report.warnings:
        lines.append("")
        lines += [f"- warning: {_md_escape(text.strip())}" for text in report.warnings]
    if report.not_compared:
        lines += ["", _md_escape(not_compared_line(report))]
    if report.unused_allow:
        lines += [
            "",
            "Allow-list entries matching no unit: "
            + ", ".join(f"`{m}`" for m in report.unused_allow),
        ]
    return "\n".join(lines) + "\n"


def junit(report: GateReport) -> str:
    """One testcase per unit: REGRESSION and BEHAVIOUR CHANGE (when it fails the gate) are
    failures, INCONCLUSIVE is skipped with its message, everything else passes."""
    counts = report.counts()
    fail_behaviour = report.config.behaviour_change == "fail"
    failures = counts[REGRESSION] + (counts[BEHAVIOUR] if fail_behaviour else 0)
    suite = ET.Element(
        "testsuite",
        name="mprof gate",
        tests=str(len(report.units)),
        failures=str(failures),
        errors="0",
        skipped=str(counts[INCONCLUSIVE]),
    )
    for u in report.sorted_units():
        case = ET.SubElement(suite, "testcase", classname=u.config or "fit", name=u.name)
        c = cells(u)
        message = f"{u.verdict}: {u.id}: baseline {c['baseline']}, candidate {c['candidate']}"
        if u.comparison is not None:
            message += (
                f", change {change_text(u)}, tolerance {100 * u.tolerance:g}%, p adj {c['p']}"
            )
        message += f"; {u.note}" if u.note else ""
        if u.verdict == REGRESSION or (u.verdict == BEHAVIOUR and fail_behaviour):
            el = ET.SubElement(case, "failure", message=message, type=u.verdict)
            el.text = message
        elif u.verdict == INCONCLUSIVE:
            ET.SubElement(case, "skipped", message=message)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = message
    suites = ET.Element(
        "testsuites",
        name="mprof gate",
        tests=suite.get("tests"),
        failures=suite.get("failures"),
        errors="0",
        skipped=suite.get("skipped"),
    )
    suites.append(suite)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def to_json(report: GateReport) -> str:
    return dumps(report.to_json(), "gate", indent=2) + "\n"


def write(path: str | Path, text: str) -> None:
    write_file(path, text)

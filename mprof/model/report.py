"""Fit results as text in the shape of the paper's Fig 4.10, and as JSON."""

from __future__ import annotations

import json

from .session import FitOutcome


def _pct(value) -> str:
    return "n/a" if value is None or value != value else f"{value:f}%"


def _fixed(value: float) -> str:
    """The paper prints %f; keep that unless it would round a small value away."""
    return f"{value:f}" if value == 0 or abs(value) >= 0.01 else f"{value:.6g}"


def format_text(outcome: FitOutcome) -> str:
    r = outcome.result
    lines = [
        f"Chi-square: {_fixed(r.chi_square)}",
        "Singular values: " + " ".join(f"{w:f}" for w in r.singular_values),
        f"Sample MRE: {_pct(r.sample_mre)}",
        f"Test MRE: {_pct(r.test_mre)}",
        "",
        f"Samples: {r.n_samples} fit, {r.n_test} test; parameters: {len(r.names)}; "
        f"rank: {r.rank}; SSE: {r.sse:g}",
        f"Chi-square p-value: {r.p_value:g} ({r.dof} degrees of freedom); "
        f"t(0.95; {r.dof}) = {r.t_quantile:.4f}",
    ]
    model = outcome.model
    modules: dict[str, list[str]] = {}
    for name in model.values:  # fitted first, then imported, in interface order
        modules.setdefault(name.split(":", 1)[0], []).append(name)
    for module, names in modules.items():
        lines.append("")
        for name in names:
            value = model.values[name]
            half = model.halfwidths.get(name)
            text = f"{name}: {value:g} +- {half:g}" if half is not None else f"{name}: {value:g}"
            notes = []
            if name in model.imported:
                notes.append("imported")
            if name in r.zero_interval:
                notes.append("interval contains 0")
            if any(name in g for g in r.null_groups):
                notes.append("not determined (rank deficient)")
            lines.append(text + (f"   [{'; '.join(notes)}]" if notes else ""))
    if model.ignored:
        lines.append("")
        lines.append("Ignored: " + " ".join(model.ignored))
    return "\n".join(lines) + "\n"


def format_json(outcome: FitOutcome) -> str:
    data = outcome.model.to_json()
    data["warnings"] = outcome.warnings
    return json.dumps(data)

"""Prints a checked Interface back as canonical `.perf` text (comments are not kept).

Parsing the printed text gives the same model: the round-trip tests rely on it, and
`mprof iface show --source` uses it to normalise a file's layout.
"""

from __future__ import annotations

from .model import Interface


def _decl(name: str, desc: str, width: int) -> str:
    return f"  {name.ljust(width)}  -- {desc}"


def _stat_head(stat) -> str:
    head = stat.name if stat.type == "u64" else f"{stat.name} : {stat.type}"
    if stat.papi_event:  # papi implies measured
        return f"{head} papi {stat.papi_event}"
    return head + (" measured" if stat.measured else "")


def format_interface(iface: Interface) -> str:
    out = [f"interface {iface.name}  -- {iface.description}", "", "statistics"]
    heads = [_stat_head(s) for s in iface.statistics]
    width = max(len(h) for h in heads)
    for stat, head in zip(iface.statistics, heads):
        out.append(f"  {head.ljust(width)}  -- {stat.description}")

    if iface.declared_terms:
        out += ["", "terms"]
        width = max(len(t.name) for t in iface.declared_terms)
        for term in iface.declared_terms:
            out.append(_decl(term.name, term.description, width))
            out.append(f"  {' ' * width}  {{ {term.name} = {term.expr.to_text()}; }}")

    out += ["", "categories"]
    width = max(len(c.name) for c in iface.categories)
    for cat in iface.categories:
        out.append(_decl(cat.name, cat.description, width))
        out.append(f"  {' ' * width}  {{ {' '.join(cat.terms)} }}")

    if iface.accesses:
        out += ["", "accesses"]
        width = max(len(a.name) for a in iface.accesses)
        for acc in iface.accesses:
            out.append(_decl(acc.name, acc.description, width))
    return "\n".join(out) + "\n"

"""Prints a checked Interface back as canonical `.perf` text (comments are not kept).

Parsing the printed text gives the same model: the round-trip tests rely on it, and
`mprof iface show --source` uses it to normalise a file's layout.
"""

from __future__ import annotations

from .model import Interface


def _decl(name: str, desc: str, width: int, type_: str | None = None) -> str:
    head = name if type_ is None else f"{name} : {type_}"
    return f"  {head.ljust(width)}  -- {desc}"


def format_interface(iface: Interface) -> str:
    out = [f"interface {iface.name}  -- {iface.description}", "", "statistics"]
    heads = [s.name if s.type == "u64" else f"{s.name} : {s.type}" for s in iface.statistics]
    width = max(len(h) for h in heads)
    for stat in iface.statistics:
        type_ = None if stat.type == "u64" else stat.type
        out.append(_decl(stat.name, stat.description, width, type_))

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

"""`mprof iface check|compile|show`: the command-line face of the interface language."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import MprofError, bounded_message
from ..files import write_file
from . import load_interface, registry
from .codegen import check_module_names, write
from .formatter import format_interface


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "iface",
        help="performance interfaces: check, compile to C hooks, show, list PAPI SDEs",
        description="Check performance interfaces (*.perf), generate their C statistic "
        "hooks, or show what they declare.",
    )
    sub = parser.add_subparsers(dest="iface_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: _usage(parser))

    p = sub.add_parser(
        "check",
        help="check every interface file and report each file's first "
        "problem (exit 2 if any file has one)",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "compile",
        help="generate <module>_perf.h and <module>_perf.c for each interface, "
        "and keep its text in the interface store ($MPROF_IFACE_STORE, else "
        "$XDG_CACHE_HOME/mprof/interfaces or ~/.cache/mprof/interfaces) under its digest",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "-o", "--output", metavar="DIR", default=".", help="output directory (default: .)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="do not list written files")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("show", help="show an interface's statistics, terms and categories")
    p.add_argument("file", metavar="FILE")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--source", action="store_true", help="print the interface as canonical .perf text"
    )
    fmt.add_argument("--json", action="store_true", help="print the model as JSON")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "sde-events",
        help="list the PAPI software-defined events of interfaces, or write a C hook that "
        "lists them for papi_native_avail -sde (docs/papi.md)",
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument(
        "--c",
        metavar="FILE.c",
        dest="c_file",
        help="write the C source of a shared library exporting papi_sde_hook_list_events "
        "(build it with -shared -fPIC ... -lsde) instead of printing the names",
    )
    p.set_defaults(func=cmd_sde_events)


def cmd_sde_events(args) -> int:
    from .sde import event_names, listing_source

    ifaces = [load_interface(path) for path in args.files]
    check_module_names(ifaces)
    if args.c_file:
        write_file(args.c_file, listing_source(ifaces), what="C file")
        return 0
    for iface in ifaces:
        for name, description, kind in event_names(iface):
            print(f"{name}\t{kind}\t{description}")
    return 0


def _usage(parser) -> int:
    parser.print_help()
    return 0


def cmd_check(args) -> int:
    # Every file is checked, so one run reports the problems of all of them.
    failed = 0
    for path in args.files:
        try:
            iface = load_interface(path)
        except MprofError as exc:
            print(bounded_message(str(exc)), file=sys.stderr)
            failed += 1
            continue
        print(
            f"{path}: interface {iface.name}: {len(iface.statistics)} statistics, "
            f"{len(iface.terms)} terms, {len(iface.categories)} categories, "
            f"{len(iface.accesses)} accesses"
        )
    return 2 if failed else 0  # an invalid input is exit 2, as everywhere in mprof


def cmd_compile(args) -> int:
    ifaces = [load_interface(path) for path in args.files]
    check_module_names(ifaces)
    for path in write(ifaces, args.output):
        if not args.quiet:
            print(path)
    for path in args.files:
        _remember(path)
    return 0


def _remember(path: str) -> None:
    """Keep the interface's text in the store (mprof.iface.registry.remember), where fits and
    the gate find it by the digest the runs record.  A store that cannot be written (a
    read-only home in a build sandbox) costs only that lookup: a warning, not a failed build."""
    try:
        registry.remember(Path(path).read_bytes())
    except OSError as exc:
        print(
            f"mprof: warning: interface {path} not kept in the store {registry.store_dir()}: "
            f"{exc.strerror or exc} ($MPROF_IFACE_STORE names another folder)",
            file=sys.stderr,
        )


def cmd_show(args) -> int:
    iface = load_interface(args.file)
    if args.source:
        sys.stdout.write(format_interface(iface))
        return 0
    if args.json:
        import json

        print(json.dumps(iface.to_dict(), indent=2))
        return 0
    _show_tables(iface)
    return 0


def _show_tables(iface) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    class Table(Table):  # noqa: F811 -- cells are plain text: descriptions may hold "[x]"
        def add_row(self, *cells):
            super().add_row(*(Text(str(c)) for c in cells))

    console = Console(highlight=False)
    head = Text(f"interface {iface.name}", style="bold")
    head.append(f" -- {iface.description}  ({iface.path})")
    console.print(head)

    table = Table(title="statistics", title_justify="left")
    for col in ("statistic", "type", "description"):
        table.add_column(col)
    for s in iface.statistics:
        kind = s.type + (
            f", papi {s.papi_event}" if s.papi_event else ", measured" if s.measured else ""
        )
        table.add_row(s.name, kind, s.description)
    console.print(table)

    table = Table(title="terms", title_justify="left")
    for col in ("parameter", "definition", "category", "description"):
        table.add_column(col)
    for t in iface.terms:
        definition = "(statistic)" if t.is_statistic else t.expr.to_text()
        table.add_row(f"{iface.name}:{t.name}", definition, t.category, t.description)
    console.print(table)

    table = Table(title="categories", title_justify="left")
    for col in ("category", "terms", "description"):
        table.add_column(col)
    for c in iface.categories:
        table.add_row(c.name, " ".join(c.terms), c.description)
    console.print(table)

    if iface.accesses:
        table = Table(title="accesses", title_justify="left")
        for col in ("access", "description"):
            table.add_column(col)
        for a in iface.accesses:
            table.add_row(f"{iface.name}:{a.name}", a.description)
        console.print(table)

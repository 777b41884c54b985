"""Every command says what it does in --help, and names what its positional arguments are."""

from __future__ import annotations

import argparse

import pytest

from mprof.cli import build_parser


def _subparser(parser, names):
    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize(
    "names",
    [
        ("fit",),
        ("db",),
        ("db", "list"),
        ("db", "show"),
        ("db", "export"),
        ("db", "import"),
        ("model",),
        ("model", "show"),
        ("model", "export-c"),
        ("latency",),
        ("gate",),
        ("gate", "power"),
    ],
)
def test_help_has_a_description_and_explains_positionals(names):
    parser = _subparser(build_parser(), names)
    if len(names) == 1:
        assert parser.description and len(parser.description) > 60, names
    for action in parser._actions:
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            assert action.help, f"mprof {' '.join(names)}: {action.dest} has no help"
    assert "%%" not in parser.format_help()

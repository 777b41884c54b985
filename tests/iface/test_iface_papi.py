"""`papi EVENT` on a statistic (docs/interface-language.md, docs/papi.md)."""

import pytest

from mprof.errors import MprofError
from mprof.iface.checker import parse_interface
from mprof.iface.codegen import render
from mprof.iface.formatter import format_interface

TEXT = """interface demo -- test
statistics
  P -- parts
  L1Miss papi PAPI_L1_DCM -- misses
  Ops : u64 papi sde:::LIB::ops -- a software-defined counter
terms
  Miss -- misses
       { Miss = L1Miss; }
categories
  MEM -- memory
      { Miss }
accesses
  A -- work
"""


def test_papi_statistics_parse_generate_and_round_trip():
    iface = parse_interface(TEXT, "demo.perf")
    stats = {s.name: (s.papi_event, s.measured) for s in iface.statistics}
    assert stats == {
        "P": (None, False),
        "L1Miss": ("PAPI_L1_DCM", True),
        "Ops": ("sde:::LIB::ops", True),
    }
    source = render(iface)["demo_perf.c"]
    assert '{"L1Miss", MP_STAT_U64, "PAPI_L1_DCM"}' in source
    assert '{"P", MP_STAT_U64, NULL}' in source
    again = parse_interface(format_interface(iface), "again.perf")
    assert [(s.name, s.papi_event) for s in again.statistics] == [
        (s.name, s.papi_event) for s in iface.statistics
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        ("  L1Miss papi -- misses", "demo.perf:4:10: expected a PAPI event name after 'papi'"),
        ("  L1Miss papi A papi B -- misses", "attribute 'papi' is given twice"),
    ],
)
def test_papi_errors(line, message):
    text = TEXT.replace("  L1Miss papi PAPI_L1_DCM -- misses", line)
    with pytest.raises(MprofError, match=message):
        parse_interface(text, "demo.perf")

"""Fixtures of the runtime tests: the C test programs of tests/c/runtime, built in the normal
tree and, on demand, in the ASan+UBSan and TSan trees (see tests/conftest.py)."""

from __future__ import annotations

import pytest
from rt_helpers import RuntimeTests


@pytest.fixture(scope="session")
def rt(cmake_build) -> RuntimeTests:
    """Runner of the runtime test programs in the normal build."""
    return RuntimeTests.for_variant(None, cmake_build)


@pytest.fixture(scope="session", params=["address", "thread"], ids=["asan", "tsan"])
def rt_san(request, cmake_build) -> RuntimeTests:
    """The same runner in a sanitizer build (each test runs once per sanitizer)."""
    return RuntimeTests.for_variant(request.param, cmake_build)

"""Fixtures of the interface-language tests."""

import pytest
from iface_helpers import INTERFACES


@pytest.fixture(params=sorted(INTERFACES))
def interface_path(request):
    return INTERFACES[request.param]

"""Fixtures for the model tests (helpers live in model_helpers.py)."""

import numpy as np
import pytest
from model_helpers import build_db


@pytest.fixture
def pipe_dbs(tmp_path):
    rng = np.random.default_rng(42)
    fit = build_db(tmp_path / "fit.db", rng, runs=16, npes=(2, 4), noise=1e-4)
    test = build_db(tmp_path / "test.db", rng, runs=6, npes=(3,), noise=1e-4)
    return fit, test

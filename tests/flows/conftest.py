"""One Prefect test server for the whole session (it takes seconds to start)."""

from __future__ import annotations

import pytest
from prefect.testing.utilities import prefect_test_harness


@pytest.fixture(scope="session")
def prefect_harness():
    with prefect_test_harness(server_startup_timeout=120):
        yield

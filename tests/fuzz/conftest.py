"""The fuzz tests' shared worker process (see fzlib/pool.py for why a subprocess)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fzlib.pool import Pool


@pytest.fixture(scope="session")
def fuzz_pool() -> Iterator[Pool]:
    """One worker for the whole session: it pays the compiler's imports once."""
    pool = Pool()
    yield pool
    pool.close()

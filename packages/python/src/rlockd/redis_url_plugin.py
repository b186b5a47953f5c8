"""The ``redis_url`` fixture, registered by the rlockd plugin only with
``rlockd_redis_url``: the name is common (a project's conftest or another
plugin may define it), so taking it over is the user's choice."""

import pytest

from rlockd.server import RlockdServer


@pytest.fixture(scope="session")
def redis_url(rlockd_session: RlockdServer) -> str:
    """The session's server's URL, as ``$REDIS_URL`` has it."""
    return rlockd_session.url

"""pytest plugin (registered by the wheel's ``pytest11`` entry point).

Fixtures: ``rlockd`` (a fresh server per test, shaped by the ``rlockd``
marker), ``rlockd_session`` (one for the session), ``rlockd_factory``
(start more, e.g. three for a Redlock quorum) and, when
``rlockd_redis_url`` is on, ``redis_url`` plus ``$REDIS_URL`` pointing at
the session's server.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pytest

from rlockd.server import Options, RlockdServer

MARKER = "rlockd"
#: Where the session's server lives on the pytest config object.
SESSION_KEY = pytest.StashKey["_SessionServer"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rlockd", "rlockd test server")
    group.addoption(
        "--rlockd-binary",
        dest="rlockd_binary",
        help="the rlockd executable (default: $RLOCKD_BINARY, the wheel's own, or PATH)",
    )
    parser.addini("rlockd_binary", "the rlockd executable", default=None)
    parser.addini(
        "rlockd_manual_clock",
        "start servers on the manual clock (RLOCKD.CLOCK) unless a marker says otherwise",
        type="bool",
        default=True,
    )
    group.addoption(
        "--rlockd-redis-url",
        dest="rlockd_redis_url",
        action="store_true",
        default=None,
        help="start the session's rlockd first, set $REDIS_URL to it and provide a redis_url fixture",
    )
    parser.addini(
        "rlockd_redis_url",
        "as --rlockd-redis-url",
        type="bool",
        default=False,
    )


def _flag(config: pytest.Config, name: str) -> Any:
    """A setting from the command line, else the ini file."""
    given = config.getoption(name)
    return given if given is not None else config.getini(name)


def _options(config: pytest.Config, **marked: Any) -> Options:
    defaults = {
        "binary": _flag(config, "rlockd_binary"),
        "manual_clock": config.getini("rlockd_manual_clock"),
    }
    try:
        return Options(**{**defaults, **marked})
    except TypeError as e:
        raise pytest.UsageError(f"@pytest.mark.{MARKER}: {e}") from None


class _SessionServer:
    """The session's server, started on first use (or at session start for
    ``$REDIS_URL``) and stopped when the session ends."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self.server: RlockdServer | None = None
        #: ``$REDIS_URL`` as it was before ``export_url`` (None: unset).
        self._saved_env: str | None = None
        self._exported = False

    def get(self) -> RlockdServer:
        if self.server is None:
            self.server = RlockdServer(_options(self._config))
        return self.server

    def export_url(self) -> None:
        self._saved_env = os.environ.get("REDIS_URL")
        os.environ["REDIS_URL"] = self.get().url
        self._exported = True

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self._exported:
            os.environ.pop("REDIS_URL")
            if self._saved_env is not None:
                os.environ["REDIS_URL"] = self._saved_env
            self._exported = False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(unix_socket=False, manual_clock=True, password=None, args=(), binary=None): "
        "how the rlockd fixture starts this test's server",
    )
    config.stash[SESSION_KEY] = _SessionServer(config)
    if _flag(config, "rlockd_redis_url"):
        config.pluginmanager.import_plugin("rlockd.redis_url_plugin")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Before collection: application modules often read $REDIS_URL on import.
    if _flag(session.config, "rlockd_redis_url"):
        session.config.stash[SESSION_KEY].export_url()


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION_KEY in config.stash:
        config.stash[SESSION_KEY].stop()


@pytest.fixture
def rlockd_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., RlockdServer]]:
    """``start(**options)`` → a new server (options as the marker's);
    every one started is stopped after the test."""
    started: list[RlockdServer] = []

    def start(**options: Any) -> RlockdServer:
        server = RlockdServer(_options(request.config, **options))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def rlockd(request: pytest.FixtureRequest, rlockd_factory: Callable[..., RlockdServer]) -> RlockdServer:
    """A server of this test's own on a free port (or a unix socket), on
    the manual clock unless ``@pytest.mark.rlockd(manual_clock=False)``."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None and marker.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only")
    return rlockd_factory(**(marker.kwargs if marker is not None else {}))


@pytest.fixture(scope="session")
def rlockd_session(pytestconfig: pytest.Config) -> RlockdServer:
    """One server for the whole session (the ``$REDIS_URL`` one): tests
    that share it clean up after themselves (or ``FLUSHALL``)."""
    return pytestconfig.stash[SESSION_KEY].get()

"""The plugin's own behaviour, run through pytest's pytester: what a user
sees when something is wrong, and that nothing is left running."""

import os
import socket

import pytest

pytest_plugins = ["pytester"]


def test_a_server_that_cannot_start_shows_its_reason(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rlockd(args=["--databases", "none"])
        def test_it(rlockd):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rlockd exited with 1 before it was ready*", "*databases*"])


def test_an_unknown_marker_option_is_named(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.rlockd(colour="red")
        def test_it(rlockd):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.rlockd: *colour*"])


def test_a_missing_binary_is_named(pytester):
    pytester.makepyfile("def test_it(rlockd): pass")
    result = pytester.runpytest("--rlockd-binary", "/nonexistent/rlockd")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*/nonexistent/rlockd is not an executable file*"])


def test_every_server_is_stopped_after_its_test(pytester, tmp_path):
    ports = tmp_path / "ports"
    pytester.makepyfile(
        f"""
        def test_it(rlockd, rlockd_session, rlockd_factory):
            extra = rlockd_factory()
            with open({str(ports)!r}, "w") as f:
                f.write(" ".join(str(s.port) for s in (rlockd, rlockd_session, extra)))
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    for port in map(int, ports.read_text().split()):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=1)


def test_redis_url_is_set_for_the_session_and_restored(pytester, monkeypatch):
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere:6379/0")
    pytester.makepyfile(
        """
        import os

        def test_it(redis_url, rlockd_session):
            assert os.environ["REDIS_URL"] == redis_url == rlockd_session.url
            assert redis_url.startswith("redis://127.0.0.1:")
        """
    )
    pytester.runpytest("--rlockd-redis-url").assert_outcomes(passed=1)
    assert os.environ["REDIS_URL"] == "redis://elsewhere:6379/0"


def test_redis_url_is_not_taken_without_the_option(pytester):
    pytester.makepyfile("def test_it(redis_url): pass")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'redis_url' not found*"])


def test_a_failed_start_leaves_no_temp_folder(tmp_path, monkeypatch):
    from rlockd import Options, RlockdError, RlockdServer

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(RlockdError, match="exited with 1"):
        RlockdServer(Options(args=["--port", "70000"]))
    assert list(tmp_path.iterdir()) == []

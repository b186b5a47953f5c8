"""The session's server as the application's Redis: `$REDIS_URL` and the
`redis_url` fixture (pytest.ini's `rlockd_redis_url = true`)."""

import os

import inventory


def test_redis_url_is_the_session_server(redis_url, rlockd_session):
    assert redis_url == rlockd_session.url == os.environ["REDIS_URL"] == inventory.REDIS_URL


def test_the_application_reserves_through_it(rlockd_session):
    try:
        assert inventory.reserve("sku-1", "alice")
        assert not inventory.reserve("sku-1", "bob")
        assert [lock.owners for lock in rlockd_session.locks("reserved:*")] == [{"alice": 1}]

        rlockd_session.clock.advance(60_001)
        assert inventory.reserve("sku-1", "bob")
    finally:
        rlockd_session.client().flushall()

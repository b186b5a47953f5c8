"""pytest-redis's own fixtures (redis_proc starts `redis-server` with its
flags, redisdb connects), pointed at the executable given in
--redis-exec: tests/redis_server_fixtures.rs passes rlockd under the
name redis-server, or the real redis-server to compare. RLOCKD_FIXTURE_EXPECTS
says which server must have answered."""

import os


def test_fixture_starts_the_server_and_a_lock_works(redis_proc, redisdb):
    assert redis_proc.running()
    info = redisdb.info("server")
    assert info["redis_version"] == "7.0.15"
    assert ("rlockd_version" in info) == (os.environ["RLOCKD_FIXTURE_EXPECTS"] == "rlockd")
    # The fixture's flags took effect.
    assert redisdb.config_get("databases") == {"databases": "8"}
    assert redisdb.config_get("unixsocket")["unixsocket"] == redis_proc.unixsocket
    assert redisdb.set("lock", "owner-1", nx=True, px=30000)
    assert not redisdb.set("lock", "owner-2", nx=True, px=30000)
    assert redisdb.pttl("lock") > 0

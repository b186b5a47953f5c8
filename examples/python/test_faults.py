"""Pub/sub waiters and fault injection: what a lock client does when the
server pauses, drops it, hangs or restarts."""

import threading

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def test_a_subscribed_waiter_is_listed_until_it_leaves(rlockd):
    waiter = rlockd.client().pubsub()
    waiter.subscribe("unlocked:orders")
    waiter.get_message(timeout=1)  # the subscribe confirmation

    [listed] = rlockd.waiters()
    assert (listed.kind, listed.name, len(listed.clients)) == ("channel", "unlocked:orders", 1)
    assert "sub=1" in rlockd.execute("CLIENT", "LIST", "ID", listed.clients[0]).decode()

    waiter.unsubscribe()
    waiter.get_message(timeout=1)
    assert rlockd.waiters() == []


def test_dropped_connections_lose_their_subscriptions_and_reconnect(rlockd):
    client = rlockd.client()
    assert client.lock("orders", timeout=30).acquire(blocking=False)
    waiter = rlockd.client().pubsub()
    waiter.psubscribe("unlocked:*")
    waiter.get_message(timeout=1)
    [listed] = rlockd.waiters()
    assert (listed.kind, listed.name, len(listed.clients)) == ("pattern", "unlocked:*", 1)

    assert rlockd.drop_connections() == 2
    assert rlockd.waiters() == []
    # The lock outlives its owner's connection; the client reconnects.
    assert [lock.key for lock in rlockd.locks()] == ["orders"]
    assert client.ping()


def test_a_write_pause_holds_acquires_back_but_not_reads(rlockd):
    lock = rlockd.client().lock("orders", timeout=30)
    rlockd.pause(10_000, "write")
    acquired = threading.Event()
    thread = threading.Thread(target=lambda: lock.acquire(blocking=False) and acquired.set())
    thread.start()
    assert not acquired.wait(0.3)
    assert rlockd.client().get("orders") is None

    rlockd.unpause()
    thread.join(10)
    assert acquired.is_set()


def test_a_frozen_server_times_clients_out(rlockd):
    impatient = rlockd.client(socket_timeout=0.2, retry=Retry(NoBackoff(), 0))
    assert impatient.ping()
    with rlockd.frozen():
        with pytest.raises(redis.TimeoutError):
            impatient.set("orders", "me", nx=True)
    assert rlockd.client().ping()


def test_a_restart_forgets_the_locks_and_keeps_the_address(rlockd):
    client = rlockd.client()
    lock = client.lock("orders", timeout=30)
    assert lock.acquire(blocking=False)
    url = rlockd.url

    rlockd.restart()
    assert rlockd.url == url
    assert rlockd.locks() == []
    assert client.lock("orders", timeout=30).acquire(blocking=False)


def test_a_quorum_over_three_servers(rlockd_factory):
    servers = [rlockd_factory() for _ in range(3)]
    assert len({server.port for server in servers}) == 3
    locks = [server.client().lock("orders", timeout=10) for server in servers]
    assert all(lock.acquire(blocking=False) for lock in locks)

    # One server's clock moves on: the quorum (2 of 3) still holds.
    servers[0].clock.advance(10_001)
    assert [len(server.locks()) for server in servers] == [0, 1, 1]

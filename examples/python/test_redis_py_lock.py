"""redis-py's own `Lock` against the `rlockd` fixture: what the server
holds, the lease on the manual clock, and the connection options."""

import asyncio
import threading

import pytest
import redis
import redis.asyncio
from redis.exceptions import LockNotOwnedError

from rlockd import HeldLock


def test_a_held_lock_is_seen_with_its_owner_and_lease(rlockd):
    lock = rlockd.client().lock("orders", timeout=30)
    assert lock.acquire(blocking=False)
    token = lock.local.token.decode()

    # The manual clock stands still, so the lease is exactly what was asked.
    assert rlockd.locks() == [HeldLock(key="orders", db=0, type="string", pttl=30_000, owners={token: 1})]
    lock.release()
    assert rlockd.locks() == []


def test_a_second_owner_waits_for_the_release(rlockd):
    holder = rlockd.client().lock("orders", timeout=30)
    assert holder.acquire(blocking=False)
    # Not thread-local: the token taken in the waiting thread is read here.
    other = rlockd.client().lock("orders", timeout=30, thread_local=False)
    assert not other.acquire(blocking=False)

    got_it = threading.Event()
    waiter = threading.Thread(target=lambda: other.acquire(blocking_timeout=10) and got_it.set())
    waiter.start()
    assert not got_it.wait(0.3)
    holder.release()
    waiter.join(10)
    assert got_it.is_set()
    assert [lock.owners for lock in rlockd.locks()] == [{other.local.token.decode(): 1}]


def test_the_lease_runs_out_when_the_clock_is_moved(rlockd):
    holder = rlockd.client().lock("orders", timeout=10)
    assert holder.acquire(blocking=False)
    other = rlockd.client().lock("orders", timeout=10)

    # As in Redis, a key lives through its deadline's millisecond.
    rlockd.clock.advance(10_000)
    assert not other.acquire(blocking=False)
    assert rlockd.locks("ord*")[0].pttl == 0

    rlockd.clock.advance(1)
    assert rlockd.locks() == []
    assert other.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError):
        holder.release()


def test_extend_moves_the_deadline(rlockd):
    lock = rlockd.client().lock("orders", timeout=10)
    assert lock.acquire(blocking=False)
    rlockd.clock.advance(8_000)
    lock.extend(10)
    assert rlockd.locks()[0].pttl == 12_000
    rlockd.clock.advance(12_000)
    assert lock.owned()
    rlockd.clock.advance(1)
    assert not lock.owned()


@pytest.mark.rlockd(unix_socket=True)
def test_over_a_unix_socket(rlockd):
    assert rlockd.url.startswith("unix://") and rlockd.port is None
    lock = redis.Redis.from_url(rlockd.url).lock("orders", timeout=5)
    assert lock.acquire(blocking=False)
    assert [lock.key for lock in rlockd.locks()] == ["orders"]


@pytest.mark.rlockd(password="s3cret/:@", args=["--databases", "4"])
def test_with_a_password_and_a_database(rlockd):
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(host=rlockd.host, port=rlockd.port).ping()
    lock = redis.Redis.from_url(rlockd.url.replace("/0", "/3")).lock("orders", timeout=5)
    assert lock.acquire(blocking=False)
    assert [(lock.key, lock.db) for lock in rlockd.locks()] == [("orders", 3)]


@pytest.mark.rlockd(manual_clock=False)
def test_on_the_real_clock_leases_run_out_by_themselves(rlockd):
    lock = rlockd.client().lock("orders", timeout=0.05)
    assert lock.acquire(blocking=False)
    other = rlockd.client().lock("orders", timeout=5)
    assert other.acquire(blocking_timeout=5)


def test_redis_asyncio_through_the_connection_kwargs(rlockd):
    async def take_and_release() -> str:
        async with redis.asyncio.Redis(**rlockd.connection_kwargs()) as client:
            lock = client.lock("orders", timeout=30)
            assert await lock.acquire(blocking=False)
            owners = rlockd.locks()[0].owners
            await lock.release()
            return next(iter(owners))

    token = asyncio.run(take_and_release())
    assert len(token) == 32 and rlockd.locks() == []

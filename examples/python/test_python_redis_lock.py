"""python-redis-lock (SET NX EX, a BLPOP signal list) against the fixture."""

import threading

import redis_lock

from rlockd import HeldLock


def test_a_held_lock_is_seen_with_its_id(rlockd):
    lock = redis_lock.Lock(rlockd.client(), "report", expire=5)
    assert lock.acquire(blocking=False)
    assert rlockd.locks() == [HeldLock(key="lock:report", db=0, type="string", pttl=5_000, owners={lock.id: 1})]
    lock.release()
    assert rlockd.locks() == []


def test_a_waiter_in_blpop_wakes_at_the_release(rlockd):
    holder = redis_lock.Lock(rlockd.client(), "report", expire=60)
    assert holder.acquire()
    waiter = redis_lock.Lock(rlockd.client(), "report", expire=60)

    got_it = threading.Event()
    thread = threading.Thread(target=lambda: waiter.acquire() and got_it.set())
    thread.start()
    assert not got_it.wait(0.3)
    holder.release()
    thread.join(10)
    assert got_it.is_set()
    assert [lock.owners for lock in rlockd.locks()] == [{waiter.id: 1}]


def test_an_expired_lock_is_free_after_the_clock_moves(rlockd):
    holder = redis_lock.Lock(rlockd.client(), "report", expire=5)
    assert holder.acquire(blocking=False)
    other = redis_lock.Lock(rlockd.client(), "report", expire=5)
    assert not other.acquire(blocking=False)

    rlockd.clock.advance(5_001)
    assert other.acquire(blocking=False)
    assert other.get_owner_id() == other.id


def test_reset_all_frees_every_lock(rlockd):
    conn = rlockd.client()
    for name in ("a", "b", "c"):
        assert redis_lock.Lock(conn, name, expire=30).acquire(blocking=False)
    assert sorted(lock.key for lock in rlockd.locks()) == ["lock:a", "lock:b", "lock:c"]
    redis_lock.reset_all(conn)
    assert rlockd.locks() == []

"""python-redis-lock (redis_lock.Lock) against the server on 127.0.0.1:PORT.

Usage: python_redis_lock.py PORT
Waiters block in BLPOP on the lock's signal list; release pushes to it.
"""

import subprocess
import sys
import threading
import time

import redis
import redis_lock

from checks import Checks, wait_until

c = Checks("python-redis-lock")
conn = redis.StrictRedis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=30)

lock = redis_lock.Lock(conn, "prl", expire=30)
c.ok(lock.acquire(blocking=False), "non-blocking acquire of a free lock")
c.ok(conn.get("lock:prl") == lock.id.encode(), "lock key holds the id", conn.get("lock:prl"))
c.within(29, 30, conn.ttl("lock:prl"), "TTL after acquire")
c.ok(not redis_lock.Lock(conn, "prl", expire=30).acquire(blocking=False), "second Lock cannot take it")
c.raises(redis_lock.NotAcquired, "release by a non-owner", redis_lock.Lock(conn, "prl", id="other").release)

# A waiter in another thread (its own connection from the pool) blocks in
# BLPOP; it must wake as soon as the holder releases, not at its timeout.
outcome = {}


def wait_for_lock():
    waiter = redis_lock.Lock(conn, "prl", expire=30)
    outcome["got"] = waiter.acquire(blocking=True, timeout=10)
    outcome["at"] = time.monotonic()
    outcome["lock"] = waiter


thread = threading.Thread(target=wait_for_lock)
thread.start()
blocked = wait_until(lambda: conn.info("clients")["blocked_clients"] == 1, 5)
c.ok(blocked, "waiter is blocked in BLPOP (INFO blocked_clients is 1)", conn.info("clients")["blocked_clients"])
time.sleep(0.2)
released_at = time.monotonic()
lock.release()
thread.join(15)
c.ok(outcome.get("got") is True, "waiter acquired after the release", outcome)
c.within(0.0, 0.5, outcome["at"] - released_at, "seconds from release to the waiter's wake-up")
waiter = outcome["lock"]
c.ok(conn.get("lock:prl") == waiter.id.encode(), "waiter's id is in the lock key")
c.ok(conn.exists("lock-signal:prl") == 0, "waiter consumed the release signal")
waiter.release()
c.ok(conn.exists("lock:prl") == 0, "release deletes the lock key")
c.ok(conn.llen("lock-signal:prl") == 1, "release with no waiter leaves one signal", conn.llen("lock-signal:prl"))
c.within(1, 1000, conn.pttl("lock-signal:prl"), "signal list PTTL (signal_expire 1000ms)")
c.raises(redis_lock.NotAcquired, "second release of the same lock", waiter.release)

# A blocking acquire that nobody releases gives up at its timeout.
holder = redis_lock.Lock(conn, "prl:held", expire=30)
c.ok(holder.acquire(), "acquire prl:held")
t0 = time.monotonic()
c.ok(not redis_lock.Lock(conn, "prl:held", expire=30).acquire(timeout=1), "blocking acquire times out")
c.within(0.9, 3.0, time.monotonic() - t0, "seconds the timed-out acquire waited")
holder.release()

# A queue of waiters: each release wakes exactly one of them (BLPOP hands the
# single signal to one client), which holds the lock briefly and releases it
# in turn, so the whole chain finishes long before any waiter's timeout.
WAITERS = 5
first = redis_lock.Lock(conn, "prl:chain", expire=30)
c.ok(first.acquire(), "acquire prl:chain")
turns = []


def take_turn(n):
    lk = redis_lock.Lock(conn, "prl:chain", expire=30)
    if lk.acquire(timeout=10):
        turns.append(n)
        time.sleep(0.05)
        lk.release()


chain = [threading.Thread(target=take_turn, args=(n,)) for n in range(WAITERS)]
for t in chain:
    t.start()
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == WAITERS, 5), f"{WAITERS} waiters blocked in BLPOP")
t0 = time.monotonic()
first.release()
for t in chain:
    t.join(15)
c.ok(sorted(turns) == list(range(WAITERS)), "every waiter got its turn", turns)
c.within(0.0, 2.0, time.monotonic() - t0, f"seconds for {WAITERS} chained hand-overs of 50ms holds")

# A waiter process killed while blocked in BLPOP must not swallow the
# release signal: the live waiter gets it at once.
holder = redis_lock.Lock(conn, "prl:killed", expire=30)
c.ok(holder.acquire(), "acquire prl:killed")
doomed = subprocess.Popen(
    [sys.executable, "-c", "import redis, sys; redis.StrictRedis(port=int(sys.argv[1])).blpop('lock-signal:prl:killed', 30)", sys.argv[1]],
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == 1, 5), "waiter process blocked in BLPOP")
outcome.clear()


def wait_for_killed():
    outcome["got"] = redis_lock.Lock(conn, "prl:killed", expire=30).acquire(timeout=10)
    outcome["at"] = time.monotonic()


thread = threading.Thread(target=wait_for_killed)
thread.start()
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == 2, 5), "a second waiter blocked behind it")
doomed.kill()
doomed.wait(5)
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == 1, 5), "killed waiter no longer blocked")
released_at = time.monotonic()
holder.release()
thread.join(15)
c.ok(outcome.get("got") is True, "live waiter acquired after the release", outcome)
c.within(0.0, 0.5, outcome["at"] - released_at, "seconds from release to the live waiter's wake-up")

# The same lock name in another database is another lock: its release must
# not wake a waiter blocked in db 1.
other_db = redis.StrictRedis(host="127.0.0.1", port=int(sys.argv[1]), db=1, socket_timeout=30)
in_db0 = redis_lock.Lock(conn, "prl:db", expire=30)
in_db1 = redis_lock.Lock(other_db, "prl:db", expire=30)
c.ok(in_db0.acquire() and in_db1.acquire(), "same lock name held in db 0 and in db 1")
outcome.clear()


def wait_in_db1():
    outcome["got"] = redis_lock.Lock(other_db, "prl:db", expire=30).acquire(timeout=10)
    outcome["at"] = time.monotonic()


thread = threading.Thread(target=wait_in_db1)
thread.start()
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == 1, 5), "a waiter blocked in db 1")
in_db0.release()
time.sleep(0.3)
c.ok("got" not in outcome, "release in db 0 did not wake the db 1 waiter", outcome)
c.ok(other_db.exists("lock-signal:prl:db") == 0 and conn.llen("lock-signal:prl:db") == 1, "the db 0 signal stayed in db 0")
released_at = time.monotonic()
in_db1.release()
thread.join(15)
c.ok(outcome.get("got") is True, "release in db 1 woke the db 1 waiter", outcome)
c.within(0.0, 0.5, outcome["at"] - released_at, "seconds from the db 1 release to its waiter's wake-up")
other_db.flushdb()

# reset() and reset_all() break locks held by others and wake their waiters;
# reset_all's script finds the locks with KEYS, keys it never declared.
held = [redis_lock.Lock(conn, name, expire=30) for name in ("prl:a", "prl:b", "prl:c")]
for lk in held:
    lk.acquire()
redis_lock.Lock(conn, "prl:a").reset()
c.ok(conn.exists("lock:prl:a") == 0 and conn.llen("lock-signal:prl:a") == 1, "reset() deleted the lock and signalled")
outcome.clear()


def wait_for_b():
    outcome["got"] = redis_lock.Lock(conn, "prl:b", expire=30).acquire(timeout=10)
    outcome["at"] = time.monotonic()


thread = threading.Thread(target=wait_for_b)
thread.start()
c.ok(wait_until(lambda: conn.info("clients")["blocked_clients"] == 1, 5), "a waiter blocked on prl:b")
reset_at = time.monotonic()
redis_lock.reset_all(conn)
thread.join(15)
c.ok(outcome.get("got") is True, "reset_all() woke the prl:b waiter, which took the lock", outcome)
c.within(0.0, 0.5, outcome["at"] - reset_at, "seconds from reset_all() to the waiter's wake-up")
c.ok(conn.exists("lock:prl:c") == 0, "reset_all() deleted lock:prl:c")
c.within(1, 1000, conn.pttl("lock-signal:prl:c"), "reset_all() signal PTTL (EXPIRE 1)")
c.ok(conn.exists("lock:prl:b") == 1, "prl:b is held by its woken waiter")

# auto_renewal: a 1s lock held for 2.5s stays ours; without it, it lapses.
renewed = redis_lock.Lock(conn, "prl:renew", expire=1, auto_renewal=True)
c.ok(renewed.acquire(), "acquire with auto_renewal and expire=1")
time.sleep(2.5)
c.ok(conn.get("lock:prl:renew") == renewed.id.encode(), "auto-renewed lock still held after 2.5s")
c.within(1, 1000, conn.pttl("lock:prl:renew"), "renewed lock PTTL")
c.ok(not redis_lock.Lock(conn, "prl:renew", expire=1).acquire(blocking=False), "renewed lock not takeable")
renewed.release()
c.ok(conn.exists("lock:prl:renew") == 0, "auto-renewed lock released")

plain = redis_lock.Lock(conn, "prl:lapse", expire=1)
c.ok(plain.acquire(), "acquire with expire=1, no renewal")
lapsed = wait_until(lambda: conn.exists("lock:prl:lapse") == 0, 3)
c.ok(lapsed, "lock without renewal expired by itself")
c.raises(redis_lock.NotAcquired, "extend after expiry", plain.extend)

c.done()

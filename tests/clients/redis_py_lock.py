"""redis-py's redis.lock.Lock against the server on 127.0.0.1:PORT.

Usage: redis_py_lock.py PORT
Uses redis-py's default connection (redis-py 8 opens it with HELLO 3).
"""

import asyncio
import sys
import threading
import time

import redis
import redis.asyncio
from redis.exceptions import LockError, LockNotOwnedError

from checks import Checks

c = Checks("redis-py Lock")
port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)

conn = r.connection_pool.get_connection()
c.ok(conn.protocol == 3, "default connection negotiated RESP3 with HELLO 3", conn.protocol)
c.ok(conn.handshake_metadata.get(b"proto") == 3, "HELLO reply names proto 3", conn.handshake_metadata)
r.connection_pool.release(conn)

# thread_local=False: a helper thread releases this lock below.
lock = r.lock("py:res", timeout=2.0, thread_local=False)
c.ok(lock.acquire(blocking=False), "non-blocking acquire of a free lock")
token = lock.local.token
c.ok(r.get("py:res") == token, "lock key holds the owner's token", r.get("py:res"))
c.within(1000, 2000, r.pttl("py:res"), "lease PTTL after acquire")
c.ok(lock.owned() and lock.locked(), "owned() and locked()")

rival = r.lock("py:res", timeout=2.0, blocking_timeout=0.3, sleep=0.05)
c.ok(not rival.acquire(blocking=False), "second Lock cannot take a held lock")
t0 = time.monotonic()
got = rival.acquire()
waited = time.monotonic() - t0
c.ok(not got, "blocking acquire with blocking_timeout=0.3 gives up")
c.within(0.2, 1.5, waited, "seconds waited by the timed-out blocking acquire")

c.ok(lock.extend(3), "extend(3) adds to the lease")
c.within(3000, 5000, r.pttl("py:res"), "PTTL after extend(3)")
c.ok(lock.extend(1, replace_ttl=True), "extend(1, replace_ttl=True)")
c.within(500, 1000, r.pttl("py:res"), "PTTL after replacing the lease with 1s")
c.ok(lock.reacquire(), "reacquire() resets the lease to the timeout")
c.within(1500, 2000, r.pttl("py:res"), "PTTL after reacquire")

# The scripts are cached by SHA; after SCRIPT FLUSH redis-py gets NOSCRIPT
# from EVALSHA and must load the script again, transparently.
r.script_flush()
c.ok(r.script_exists(lock.lua_extend.sha) == [False], "SCRIPT FLUSH dropped the extend script")
c.ok(lock.extend(1), "extend after SCRIPT FLUSH (NOSCRIPT fallback)")
c.ok(r.script_exists(lock.lua_extend.sha) == [True], "extend script loaded again by SHA")



def intruder():
    """A Lock on the same name holding a token that is not the owner's."""
    lk = r.lock("py:res", timeout=2.0)
    lk.local.token = b"not-the-owner"
    return lk


c.raises(LockNotOwnedError, "release by a non-owner", intruder().release)
c.raises(LockNotOwnedError, "extend by a non-owner", intruder().extend, 1)
c.raises(LockNotOwnedError, "reacquire by a non-owner", intruder().reacquire)
c.ok(r.get("py:res") == token, "owner's token survives the intruder", r.get("py:res"))
c.raises(LockError, "release of a never-acquired Lock", r.lock("py:res").release)


def release_later(lk, delay):
    time.sleep(delay)
    lk.release()


releaser = threading.Thread(target=release_later, args=(lock, 0.3))
releaser.start()
waiter = r.lock("py:res", timeout=2.0, blocking_timeout=5, sleep=0.02)
t0 = time.monotonic()
got = waiter.acquire()
waited = time.monotonic() - t0
releaser.join(5)
c.ok(got, "blocking acquire succeeds once the holder releases")
c.within(0.25, 1.5, waited, "seconds the blocked acquire waited for a 0.3s holder")
c.ok(r.get("py:res") == waiter.local.token, "waiter now owns the key")
waiter.release()
c.ok(r.exists("py:res") == 0, "release deletes the key")

short = r.lock("py:lease", timeout=0.2)
c.ok(short.acquire(blocking=False), "acquire with a 200ms lease")
time.sleep(0.4)
c.ok(r.exists("py:lease") == 0, "lease expired by itself after 400ms")
c.ok(not short.owned(), "expired lock is no longer owned")
taker = r.lock("py:lease", timeout=2.0)
c.ok(taker.acquire(blocking=False), "another client takes the expired lock")
c.raises(LockNotOwnedError, "extend after the lease expired", short.extend, 1)
c.raises(LockNotOwnedError, "release after the lease expired", short.release)
c.ok(taker.owned(), "new owner unaffected by the old owner's release")
taker.release()

with r.lock("py:ctx", timeout=2.0, blocking_timeout=1) as held:
    c.ok(held.owned(), "context manager holds the lock")
c.ok(r.exists("py:ctx") == 0, "context manager released the lock")

# Mutual exclusion: threads each do a non-atomic GET/SET increment under the lock.
THREADS, ROUNDS = 8, 40
r.set("py:counter", 0)
failures = []


def worker():
    for _ in range(ROUNDS):
        lk = r.lock("py:mutex", timeout=5.0, blocking_timeout=10, sleep=0.002)
        if not lk.acquire():
            failures.append("acquire timed out")
            return
        value = int(r.get("py:counter"))
        r.set("py:counter", value + 1)
        lk.release()


threads = [threading.Thread(target=worker) for _ in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
c.ok(not failures and not any(t.is_alive() for t in threads), "all lock workers finished", failures)
c.ok(int(r.get("py:counter")) == THREADS * ROUNDS, f"counter is exactly {THREADS * ROUNDS}", r.get("py:counter"))

# A Redisson-style wait: a waiter subscribed on a RESP3 connection (pub/sub
# messages arrive as push frames) hears the unlock script's PUBLISH.
UNLOCK_AND_PUBLISH = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], 'unlocked')
  return 1
end
return 0"""
unlock_and_publish = r.register_script(UNLOCK_AND_PUBLISH)
pubsub = r.pubsub()
pubsub.subscribe("py:chan")
confirm = pubsub.get_message(timeout=2)
c.ok(confirm and confirm["type"] == "subscribe", "RESP3 subscribe confirmed", confirm)
c.ok(r.set("py:pub", "tok", px=2000, nx=True), "take py:pub")
c.ok(unlock_and_publish(keys=["py:pub", "py:chan"], args=["other"]) == 0, "unlock script refuses a wrong token")
c.ok(pubsub.get_message(timeout=0.2) is None, "no message for a refused unlock")
t0 = time.monotonic()
c.ok(unlock_and_publish(keys=["py:pub", "py:chan"], args=["tok"]) == 1, "unlock script with the owner's token")
message = pubsub.get_message(timeout=2)
c.ok(message and message["type"] == "message" and message["data"] == b"unlocked", "waiter got the script's PUBLISH", message)
c.within(0.0, 0.5, time.monotonic() - t0, "seconds from unlock to the push message")
pubsub.close()

# The same lock over RESP2, as clients configured with protocol=2 speak.
r2 = redis.Redis(host="127.0.0.1", port=port, protocol=2, socket_timeout=10)
c.ok(r2.client_info()["resp"] == "2", "protocol=2 connection stays on RESP2", r2.client_info())
resp2 = r2.lock("py:resp2", timeout=1.0)
c.ok(resp2.acquire(blocking=False), "RESP2: acquire")
c.ok(not r2.lock("py:resp2").acquire(blocking=False), "RESP2: held lock refuses a second owner")
c.ok(resp2.extend(1), "RESP2: extend")
resp2.release()
c.ok(r2.exists("py:resp2") == 0, "RESP2: release")


async def asyncio_lock():
    """redis.asyncio's Lock: the same scripts over the asyncio connection."""
    ar = redis.asyncio.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    held = ar.lock("py:async", timeout=2.0)
    c.ok(await held.acquire(blocking=False), "asyncio: acquire")
    waiter = ar.lock("py:async", timeout=2.0, blocking_timeout=5, sleep=0.02)

    async def release_later():
        await asyncio.sleep(0.3)
        await held.release()

    t0 = time.monotonic()
    got, _ = await asyncio.gather(waiter.acquire(), release_later())
    c.ok(got, "asyncio: waiter acquires after the release")
    c.within(0.25, 1.5, time.monotonic() - t0, "asyncio: seconds the waiter waited")
    c.ok(await waiter.extend(1), "asyncio: extend")
    await waiter.release()
    c.ok(await ar.exists("py:async") == 0, "asyncio: release")

    await ar.set("py:async:counter", 0)

    async def task():
        for _ in range(25):
            async with ar.lock("py:async:mutex", timeout=5.0, blocking_timeout=10, sleep=0.002):
                value = int(await ar.get("py:async:counter"))
                await asyncio.sleep(0)
                await ar.set("py:async:counter", value + 1)

    await asyncio.wait_for(asyncio.gather(*(task() for _ in range(8))), 60)
    c.ok(int(await ar.get("py:async:counter")) == 200, "asyncio: 8 tasks x 25 locked increments = 200")
    await ar.aclose()


asyncio.run(asyncio_lock())

c.done()

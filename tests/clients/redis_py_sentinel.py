"""redis-py in Sentinel mode, locking through a failover (tests/sentinel.rs).

Arguments: the master's name, then the sentinels' ports. Takes and
releases a `Lock` on the primary the sentinels name, over and over, and
prints `locked PORT` after each round that held it, PORT being the port
of the server it held it on (CONFIG GET port, before and after). A failed round (the primary gone, a
connection dropped by the promotion) is retried: the client asks the
sentinels anew. Runs until killed.
"""

import sys
import time

import redis
from redis.sentinel import Sentinel


def main():
    name = sys.argv[1]
    sentinels = [("127.0.0.1", int(p)) for p in sys.argv[2:]]
    sentinel = Sentinel(sentinels, socket_timeout=0.5)
    primary = sentinel.master_for(name, socket_timeout=0.5)
    while True:
        try:
            before = primary.config_get("port")["port"]
            lock = primary.lock("sentinel-lock", timeout=5, blocking_timeout=1)
            if lock.acquire():
                lock.release()
                if primary.config_get("port")["port"] == before:
                    print(f"locked {before}", flush=True)
        except redis.exceptions.RedisError as e:
            print(f"retry {type(e).__name__}: {e}", flush=True)
        time.sleep(0.05)


main()

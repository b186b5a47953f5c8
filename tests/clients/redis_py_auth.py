"""redis-py's Lock on a server with requirepass, in a non-zero database.

Usage: REDIS_PASSWORD=... redis_py_auth.py PORT
With a password redis-py 8 authenticates inside HELLO (HELLO 3 AUTH default
PASS); over RESP2 it sends AUTH; db= makes it SELECT after that.
"""

import os
import sys

import redis
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError
from redis.retry import Retry

from checks import Checks

c = Checks("redis-py auth and db")
port = int(sys.argv[1])
password = os.environ["REDIS_PASSWORD"]


def connect(**kwargs):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, **kwargs)


# redis-py retries a refused connection with backoff (seconds); once is enough here.
once = Retry(NoBackoff(), 0)
c.raises(AuthenticationError, "no password", connect(retry=once).ping)
c.raises(AuthenticationError, "wrong password", connect(password="wrong", retry=once).ping)
c.raises(AuthenticationError, "wrong password over RESP2", connect(password="wrong", protocol=2, retry=once).ping)

for protocol in (3, 2):
    r = connect(password=password, db=3, protocol=protocol)
    info = r.client_info()
    c.ok(info["db"] == 3 and info["resp"] == str(protocol), f"RESP{protocol}: authenticated and in db 3", info)
    lock = r.lock(f"auth:res:{protocol}", timeout=2.0)
    c.ok(lock.acquire(blocking=False), f"RESP{protocol}: acquire")
    c.ok(not r.lock(f"auth:res:{protocol}").acquire(blocking=False), f"RESP{protocol}: held lock refuses a second owner")
    db0 = connect(password=password, username="default", db=0, protocol=protocol)
    c.ok(db0.exists(f"auth:res:{protocol}") == 0, f"RESP{protocol}: lock key is not in db 0")
    c.ok(lock.extend(1), f"RESP{protocol}: extend")
    lock.release()
    c.ok(r.exists(f"auth:res:{protocol}") == 0, f"RESP{protocol}: release")

c.done()

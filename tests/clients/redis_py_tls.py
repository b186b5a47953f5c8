"""redis-py over TLS (ssl=True): its Lock with a client certificate and
without one (the servers run tls-auth-clients optional), and the
certificates either side must refuse.

Usage: RLOCKD_TLS_DIR=... redis_py_tls.py TLS_PORT
The directory holds a throw-away PKI that tests/real_clients.rs made:
ca.pem, client.pem/client.key, and rogue-ca.pem, rogue.pem/rogue.key from a
CA the server does not trust.
"""

import os
import sys

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from checks import Checks

c = Checks("redis-py over TLS")
port = int(sys.argv[1])
tls_dir = os.environ["RLOCKD_TLS_DIR"]


def pem(name):
    return os.path.join(tls_dir, name)


def connect(trusts="ca.pem", **kwargs):
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        ssl=True,
        ssl_ca_certs=pem(trusts),
        socket_timeout=10,
        **kwargs,
    )


with_cert = dict(ssl_certfile=pem("client.pem"), ssl_keyfile=pem("client.key"))
for label, kwargs in (("with a client certificate", with_cert), ("without one", {})):
    for protocol in (2, 3):
        r = connect(protocol=protocol, **kwargs)
        c.ok(r.ping(), f"{label}, RESP{protocol}: PING")
        name = f"tls:lock:{protocol}:{len(kwargs)}"
        lock = r.lock(name, timeout=2.0)
        c.ok(lock.acquire(blocking=False), f"{label}, RESP{protocol}: acquire")
        c.ok(not r.lock(name).acquire(blocking=False), f"{label}, RESP{protocol}: a held lock refuses a second owner")
        c.ok(lock.extend(1), f"{label}, RESP{protocol}: extend")
        lock.release()
        c.ok(r.exists(name) == 0, f"{label}, RESP{protocol}: release")
        laddr = r.client_info()["laddr"]
        c.ok(laddr == f"127.0.0.1:{port}", f"{label}, RESP{protocol}: CLIENT INFO laddr is the TLS port", laddr)

# redis-py retries a refused connection with backoff; once is enough here.
once = Retry(NoBackoff(), 0)
c.raises(redis.ConnectionError, "a server whose CA the client does not trust",
         connect(trusts="rogue-ca.pem", retry=once).ping)
c.raises(redis.ConnectionError, "a client certificate whose CA the server does not trust",
         connect(ssl_certfile=pem("rogue.pem"), ssl_keyfile=pem("rogue.key"), retry=once).ping)
c.done()

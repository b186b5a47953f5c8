"""rlockd, the lock-oriented Redis-compatible server, for Python tests.

``RlockdServer`` runs the binary this wheel ships; the pytest plugin
(``rlockd.pytest_plugin``) wraps it in fixtures.
"""

from rlockd.server import Clock, HeldLock, Options, RlockdError, RlockdServer, Waiters, find_binary

__all__ = ["Clock", "HeldLock", "Options", "RlockdError", "RlockdServer", "Waiters", "find_binary"]

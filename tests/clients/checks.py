"""Assertion helpers shared by the Python client programs.

Each program prints one line per passed check, and on the first failed
check prints FAIL with what it saw and exits 1, so that the Rust harness
(tests/real_clients.rs) can show exactly what broke.
"""

import sys
import time


class Checks:
    def __init__(self, scenario):
        self.scenario = scenario
        self.passed = 0

    def ok(self, cond, what, seen=None):
        if not cond:
            detail = f" (saw {seen!r})" if seen is not None else ""
            print(f"FAIL {self.scenario}: {what}{detail}", flush=True)
            sys.exit(1)
        self.passed += 1
        print(f"ok {what}", flush=True)

    def raises(self, exc_type, what, fn, *args, **kwargs):
        try:
            got = fn(*args, **kwargs)
        except exc_type as e:
            self.ok(True, f"{what} ({type(e).__name__}: {e})")
            return
        except Exception as e:  # a wrong exception type is a failure too
            self.ok(False, f"{what}: expected {exc_type.__name__}", f"{type(e).__name__}: {e}")
        self.ok(False, f"{what}: expected {exc_type.__name__}", got)

    def within(self, low, high, value, what):
        self.ok(low <= value <= high, f"{what} = {value:.3f} in [{low}, {high}]" if isinstance(value, float) else f"{what} = {value} in [{low}, {high}]", value)

    def done(self):
        print(f"PASS {self.scenario}: {self.passed} checks", flush=True)


def wait_until(cond, timeout, step=0.01):
    """Polls `cond` until it holds or `timeout` seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got or time.monotonic() >= deadline:
            return got
        time.sleep(step)

"""A running rlockd process and the controls its own commands give a test.

Everything here goes through the server's public surface: the ready file
(``--ready-file``) says where it listens, and ``RLOCKD.CLOCK``,
``RLOCKD.LOCKS``, ``RLOCKD.WAITERS``, ``CLIENT PAUSE`` and ``CLIENT KILL``
do the work. Nothing about locks or time is modelled in Python.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import quote

import redis

#: The environment variable that names the binary to run instead of the
#: one the wheel installed.
BINARY_ENV = "RLOCKD_BINARY"

#: How long a start may take before it counts as failed: a debug build on a
#: loaded CI machine is the slow case.
START_TIMEOUT_S = 30.0
#: How long a graceful stop (SIGTERM) may take before the process is killed.
STOP_TIMEOUT_S = 10.0
#: How often a start looks for the ready file.
READY_POLL_S = 0.01

#: The ready line's fixed part; what follows is ``ADDR, ADDR, …, SOCKET``.
READY_MARK = " ready to accept connections on "


class RlockdError(RuntimeError):
    """rlockd could not be found, started or driven as asked."""


def find_binary(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The rlockd executable: ``explicit``, else ``$RLOCKD_BINARY``, else
    the one this package installed beside the Python scripts, else
    ``rlockd`` on PATH."""
    for candidate in (explicit, os.environ.get(BINARY_ENV)):
        if candidate:
            path = Path(candidate)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise RlockdError(f"rlockd binary {path} is not an executable file")
            return path
    name = "rlockd.exe" if sys.platform == "win32" else "rlockd"
    installed = Path(sysconfig.get_path("scripts")) / name
    if installed.is_file():
        return installed
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    raise RlockdError(
        "no rlockd binary: install the rlockd wheel, or set "
        f"${BINARY_ENV} (or --rlockd-binary) to a built one (cargo build --release)"
    )


@dataclass(frozen=True)
class HeldLock:
    """One lock as ``RLOCKD.LOCKS`` reports it."""

    key: str
    db: int
    #: ``"hash"`` (Redisson's owner → holds hash) or ``"string"`` (the owner
    #: as the value, with a deadline: redis-py's and python-redis-lock's).
    type: str
    #: Milliseconds left on its lease, -1 without one.
    pttl: int
    #: Owner → reentrant holds (1 for a string lock).
    owners: dict[str, int]


@dataclass(frozen=True)
class Waiters:
    """One channel, pattern or shard channel with subscribers, as
    ``RLOCKD.WAITERS`` reports it."""

    #: ``"channel"``, ``"pattern"`` or ``"shardchannel"``.
    kind: str
    name: str
    #: The subscribers' CLIENT IDs.
    clients: list[int]


def _text(value: Any) -> Any:
    """Bytes as text that round-trips (binary keys survive), anything else
    as it is."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


def _as_map(reply: Any) -> dict[str, Any]:
    """A map reply as a dict of text keys: RESP3 gives a dict, RESP2 the
    same pairs flattened into a list."""
    if isinstance(reply, Mapping):
        pairs = reply.items()
    else:
        pairs = zip(reply[0::2], reply[1::2])
    return {_text(k): _text(v) for k, v in pairs}


@dataclass
class Options:
    """How a server is started; the ``rlockd`` marker takes the same names."""

    #: Serve a unix socket only (no TCP), in the server's own temp folder.
    unix_socket: bool = False
    #: Run on the manual clock (``--enable-clock-control``): time moves only
    #: when the test calls ``clock.advance``/``clock.set``.
    manual_clock: bool = True
    #: ``requirepass``: the clients from ``client()`` authenticate with it.
    password: str | None = None
    #: Any further flags, as on the command line (``["--databases", "4"]``).
    args: Sequence[str] = field(default_factory=tuple)
    #: The binary (else ``find_binary()``'s choice).
    binary: str | os.PathLike[str] | None = None


class Clock:
    """The server's manual clock (``RLOCKD.CLOCK``), in Unix milliseconds."""

    def __init__(self, server: RlockdServer) -> None:
        self._server = server

    def _call(self, *args: Any) -> int:
        if not self._server.options.manual_clock:
            raise RlockdError("this server runs on the real clock (manual_clock=False)")
        return int(self._server.execute("RLOCKD.CLOCK", *args))

    def now(self) -> int:
        return self._call("GET")

    def advance(self, ms: int) -> int:
        """Moves time on by ``ms``; every key whose deadline passed is gone
        (and its ``expired`` event raised) when this returns. Answers the
        new time."""
        return self._call("ADVANCE", ms)

    def set(self, unix_ms: int) -> int:
        """Moves time to ``unix_ms`` (as ``advance``)."""
        return self._call("SET", unix_ms)


class RlockdServer:
    """An rlockd process on a free port (or a unix socket), stopped by
    ``stop()`` or at the end of a ``with`` block."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self.binary = find_binary(self.options.binary)
        self._dir = Path(tempfile.mkdtemp(prefix="rlockd-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._clients: list[redis.Redis] = []
        self._control: redis.Redis | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.unix_socket: str | None = None
        self.clock = Clock(self)
        try:
            self._start(port=0)
        except BaseException:
            self.stop()  # its temp folder too
            raise

    # -- life cycle -------------------------------------------------------

    @property
    def _ready_file(self) -> Path:
        return self._dir / "ready"

    @property
    def log_file(self) -> Path:
        """The server's stdout and stderr."""
        return self._dir / "rlockd.log"

    def _command_line(self, port: int) -> list[str]:
        opts = self.options
        line = [str(self.binary), "--port", str(port), "--ready-file", str(self._ready_file)]
        if opts.unix_socket:
            line += ["--unixsocket", str(self._dir / "rlockd.sock")]
        else:
            line += ["--bind", "127.0.0.1"]
        if opts.manual_clock:
            line.append("--enable-clock-control")
        if opts.password is not None:
            line += ["--requirepass", opts.password]
        return line + ["--loglevel", "warning", *opts.args]

    def _start(self, port: int) -> None:
        self._ready_file.unlink(missing_ok=True)
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                self._command_line(port),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._dir,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready_file.exists():
            if self._process.poll() is not None:
                raise RlockdError(
                    f"rlockd exited with {self._process.returncode} before it was ready:\n"
                    + self.log_file.read_text(errors="replace")
                )
            if time.monotonic() > deadline:
                self._kill()
                raise RlockdError(f"rlockd was not ready after {START_TIMEOUT_S:.0f}s")
            time.sleep(READY_POLL_S)
        self._read_ready_line(self._ready_file.read_text().strip())

    def _read_ready_line(self, line: str) -> None:
        """Learns where the server listens from its ready line, ``rlockd V
        ready to accept connections on 127.0.0.1:PORT`` (its first TCP
        address is the one a ``--bind`` in ``args`` put first); on a unix
        socket alone the line names only the socket, which is ours."""
        _, mark, places = line.partition(READY_MARK)
        if not mark:
            raise RlockdError(f"rlockd's ready line is not understood: {line!r}")
        if self.options.unix_socket:
            self.unix_socket = str(self._dir / "rlockd.sock")
            return
        host, _, port = places.split(", ")[0].rpartition(":")
        self.host, self.port = host.strip("[]"), int(port)

    def stop(self) -> None:
        """Closes every client it handed out and stops the server
        (SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``); idempotent."""
        self._close_clients()
        self._stop_process()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _stop_process(self) -> None:
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGCONT)  # a frozen server cannot stop
        self._process.terminate()
        try:
            self._process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._kill()

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def _close_clients(self) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
        self._control = None

    def __enter__(self) -> RlockdServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connecting -------------------------------------------------------

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0`` or ``unix://PATH`` (with the
        password, when there is one): what ``redis.Redis.from_url`` and a
        ``REDIS_URL`` setting take."""
        password = self.options.password
        if self.unix_socket is not None:
            query = f"?password={quote(password, safe='')}" if password is not None else ""
            return f"unix://{self.unix_socket}{query}"
        auth = f":{quote(password, safe='')}@" if password is not None else ""
        return f"redis://{auth}{self.host}:{self.port}/0"

    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for any redis-py client class (``Redis``,
        ``redis.asyncio.Redis``, a ``ConnectionPool``) to reach this server."""
        where: dict[str, Any]
        if self.unix_socket is not None:
            where = {"unix_socket_path": self.unix_socket}
        else:
            where = {"host": self.host, "port": self.port}
        if self.options.password is not None:
            where["password"] = self.options.password
        return where

    def client(self, **kwargs: Any) -> redis.Redis:
        """A new redis-py client (``kwargs`` go to ``redis.Redis``), closed
        when the server stops."""
        client = redis.Redis(**{**self.connection_kwargs(), **kwargs})
        self._clients.append(client)
        return client

    def execute(self, *args: Any) -> Any:
        """Runs one command on the fixture's own connection (which fault
        injection leaves alone)."""
        if self._control is None:
            self._control = self.client(client_name="rlockd-fixture")
        return self._control.execute_command(*args)

    # -- introspection ----------------------------------------------------

    def _entries(self, command: str, pattern: str | None) -> list[dict[str, Any]]:
        """An introspection command's reply: one map per entry."""
        reply = self.execute(command, *([pattern] if pattern is not None else []))
        return [_as_map(entry) for entry in reply]

    def locks(self, pattern: str | None = None) -> list[HeldLock]:
        """The locks held now (``RLOCKD.LOCKS [pattern]``), in every database."""
        return [
            HeldLock(
                key=fields["key"],
                db=int(fields["db"]),
                type=fields["type"],
                pttl=int(fields["pttl"]),
                owners={k: int(v) for k, v in _as_map(fields["owners"]).items()},
            )
            for fields in self._entries("RLOCKD.LOCKS", pattern)
        ]

    def waiters(self, pattern: str | None = None) -> list[Waiters]:
        """Every channel, pattern and shard channel that has subscribers
        (``RLOCKD.WAITERS [pattern]``): where pub/sub lock waiters wait."""
        return [
            Waiters(
                kind=fields["kind"],
                name=fields["name"],
                clients=[int(c) for c in fields["clients"]],
            )
            for fields in self._entries("RLOCKD.WAITERS", pattern)
        ]

    # -- fault injection --------------------------------------------------

    def pause(self, ms: int, mode: str = "write") -> None:
        """``CLIENT PAUSE ms WRITE|ALL``: commands (writes, scripts and
        PUBLISH under ``write``; everything under ``all``) wait unanswered
        until ``ms`` pass or ``unpause()``; no key expires meanwhile."""
        self.execute("CLIENT", "PAUSE", ms, mode.upper())

    def unpause(self) -> None:
        """Ends a ``pause(…, "write")`` at once. (Under ``"all"`` CLIENT
        UNPAUSE waits too, as in Redis: that pause runs its course.)"""
        self.execute("CLIENT", "UNPAUSE")

    def drop_connections(self) -> int:
        """Closes every client connection but the fixture's own, as a
        network failure would (``CLIENT KILL TYPE normal``, then ``pubsub``);
        answers how many were closed."""
        return sum(int(self.execute("CLIENT", "KILL", "TYPE", kind)) for kind in ("normal", "pubsub"))

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Stops the process (SIGSTOP) for the ``with`` block: connections
        stay open and nothing answers, as with a hung server or a
        partition; it resumes (SIGCONT) at the end."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)
        # The signal is delivered later; the stop is certain once the
        # parent is told of it (the child stays unreaped: it only stopped).
        os.waitpid(self._process.pid, os.WUNTRACED)
        try:
            yield
        finally:
            self._process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """Stops the server gracefully and starts it again on the same port
        (or socket) with the same flags: what it held in memory is gone,
        clients reconnect as after a real restart."""
        self._stop_process()
        self._start(port=self.port or 0)

"""The real server for the tests: built from this repository once per
session, started per test on a free loopback port with a temp data dir.

Which tenure_locks the tests run: the source beside them (make
test-python's run on Debian's python3-redis), or, with
TENURE_LOCKS_INSTALLED=1, the one installed in the running Python (the
wheel in the venv with the newest redis-py), never the source folder."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import AsyncIterator, Dict, List, Optional, Sequence

import pytest
import redis.asyncio as aredis

REPO = Path(__file__).resolve().parents[3]
SDK = Path(__file__).resolve().parents[1]
INSTALLED = os.environ.get("TENURE_LOCKS_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, str(SDK))

import tenure_locks  # noqa: E402

if INSTALLED and Path(tenure_locks.__file__).resolve().is_relative_to(SDK / "tenure_locks"):
    raise RuntimeError(f"TENURE_LOCKS_INSTALLED=1, but tenure_locks comes from the source: {tenure_locks.__file__}")

# The PYTHONPATH a child Python needs to import the same tenure_locks.
CHILD_PYTHONPATH = "" if INSTALLED else str(SDK)


def pytest_report_header() -> str:
    import redis

    return f"tenure_locks from {Path(tenure_locks.__file__).parent}, redis-py {redis.__version__}"


async def close_client(c) -> None:
    """Closes a redis.asyncio client: aclose() where redis-py has it (5.0.1
    and later deprecate close()), close() on 4.3."""
    aclose = getattr(c, "aclose", None)
    await (aclose() if aclose is not None else c.close())


@pytest.fixture(scope="session")
def tenure_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bin") / "tenure"
    go = os.environ.get("GO", "go")
    subprocess.run([go, "build", "-o", str(out), "./cmd/tenure"], cwd=REPO, check=True)
    return out


def ready(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    """Waits until the tenure process writing log says it accepts
    connections, and returns the address it listens on."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        m = re.search(r'ready to accept connections" addr=(\S+)', log.read_text())
        if m:
            return m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    raise RuntimeError(f"tenure did not start: {log.read_text()}")


class Server:
    """One tenure process; restart keeps its address and data dir."""

    def __init__(self, binary: Path, workdir: Path, users: Optional[Path] = None, flags: Sequence[str] = ()):
        self.binary, self.workdir, self.users, self.flags = binary, workdir, users, list(flags)
        self.dir = workdir / "data"
        self.addr = "127.0.0.1:0"
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0

    @property
    def host(self) -> str:
        return self.addr.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.addr.rsplit(":", 1)[1])

    def start(self) -> None:
        self.starts += 1
        log = self.workdir / f"server-{self.starts}.log"
        args = [str(self.binary), "--addr", self.addr, "--dir", str(self.dir)]
        if self.users is not None:
            args += ["--users", str(self.users)]
        args += self.flags
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
        self.addr = ready(self.proc, log, timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def server(tenure_bin: Path, tmp_path: Path):
    s = Server(tenure_bin, tmp_path)
    s.start()
    yield s
    s.stop()


def users_file(path: Path, users: Dict[str, tuple]) -> Path:
    """A users file (SPEC §5): name -> (role, password)."""
    lines = [f"user {name} {role} sha256:{hashlib.sha256(pw.encode()).hexdigest()}"
             for name, (role, pw) in users.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class Clients:
    """redis.asyncio clients made by a test, closed after it."""

    def __init__(self) -> None:
        self.made: List[aredis.Redis] = []

    def __call__(self, host: str, port: int, **kw) -> aredis.Redis:
        c = aredis.Redis(host=host, port=port, **kw)
        self.made.append(c)
        return c


@pytest.fixture
async def clients() -> AsyncIterator[Clients]:
    cs = Clients()
    yield cs
    for c in cs.made:
        await close_client(c)


@pytest.fixture
async def admin(server: Server, clients: Clients) -> aredis.Redis:
    return clients(server.host, server.port)


@pytest.fixture
async def proxy(server: Server) -> AsyncIterator["Proxy"]:
    from proxy import Proxy

    p = Proxy(server)
    await p.start()
    yield p
    await p.close()


@pytest.fixture(autouse=True)
async def no_task_left() -> AsyncIterator[None]:
    """Every hold waits for the tasks it started: none outlives the test."""
    yield
    me = asyncio.current_task()
    for _ in range(100):
        left = [t for t in asyncio.all_tasks() if t is not me]
        if not left:
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"tasks still running after the test: {left}")


async def key_info(c: aredis.Redis, lock: str, key: str) -> Optional[Dict[str, int]]:
    """LOCK.INFO lock key as a dict; None when the key is free and nobody waits."""
    r = await c.execute_command("LOCK.INFO", lock, key)
    if r is None:
        return None
    pairs = r.items() if isinstance(r, dict) else zip(r[::2], r[1::2])  # a RESP3 map (redis-py 5+'s default) or a flat array
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in pairs}


async def lock_stats(c: aredis.Redis) -> Dict[str, int]:
    """INFO's # Locks section."""
    return await c.execute_command("INFO", "locks")


async def until(what: str, cond, timeout: float = 5.0) -> None:
    """Waits until the async cond() is true, or fails naming what."""
    give_up = time.monotonic() + timeout
    while not await cond():
        if time.monotonic() > give_up:
            pytest.fail(f"waited {timeout}s for {what}")
        await asyncio.sleep(0.01)


async def holding(lock, key: str):
    """Starts a task that holds key until the returned event is set, and
    returns (task, event) once it holds. The task returns when it let go."""
    held, end = asyncio.Event(), asyncio.Event()

    async def holder() -> float:
        async with lock.hold(key):
            held.set()
            await end.wait()
        return time.monotonic()

    task = asyncio.create_task(holder())
    await held.wait()
    return task, end


async def waiters_are(c: aredis.Redis, lock: str, key: str, n: int) -> None:
    async def cond() -> bool:
        info = await key_info(c, lock, key)
        return info is not None and info["waiters"] == n

    await until(f"{n} waiters on {lock}/{key}", cond)


class ThreeNodes:
    """A tenure cluster of three nodes on loopback (SPEC §10), each a process
    of the built binary with a directory of its own, a short election
    timeout (250ms) so that failovers are quick."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary, self.workdir = binary, workdir
        self.ports = free_ports(3)
        self.peers = ",".join(f"n{i + 1}=127.0.0.1:{p}" for i, p in enumerate(self.ports))
        self.procs: List[Optional[subprocess.Popen]] = [None, None, None]

    def start(self, i: int) -> None:
        log = self.workdir / f"n{i + 1}.log"
        args = [str(self.binary), "--node-id", f"n{i + 1}", "--peers", self.peers,
                "--dir", str(self.workdir / f"n{i + 1}"), "--fsync", "no", "--raft-election-timeout", "250ms"]
        with open(log, "wb") as f:
            self.procs[i] = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
        ready(self.procs[i], log, timeout=20)

    def alive(self, i: int) -> bool:
        p = self.procs[i]
        return p is not None and p.poll() is None

    async def leader(self, timeout: float = 20.0) -> int:
        """The index of the node whose ROLE is master, once one is."""
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            for i, port in enumerate(self.ports):
                if not self.alive(i):
                    continue
                c = aredis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
                try:
                    role = await c.execute_command("ROLE")
                except Exception:
                    role = None
                finally:
                    await close_client(c)
                if role and role[0] == b"master":
                    return i
            await asyncio.sleep(0.02)
        pytest.fail(f"no leader within {timeout}s")

    def kill(self, i: int) -> None:
        p = self.procs[i]
        assert p is not None
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def stop(self) -> None:
        for i in range(3):
            if self.alive(i):
                self.kill(i)


def free_ports(n: int) -> List[int]:
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.fixture
def cluster(tenure_bin: Path, tmp_path: Path):
    c = ThreeNodes(tenure_bin, tmp_path)
    try:
        for i in range(3):
            c.start(i)
        yield c
    finally:
        c.stop()

"""An asyncio TCP proxy for the tests: swallowed replies, latency, cuts."""

import asyncio
import time
from typing import Callable, List, Optional, Set

from conftest import Server


class Proxy:
    """A TCP proxy in front of the server, on a free loopback port. It can
    swallow a reply (swallow(request, reply) says which), delay every
    request by `delay` seconds or one by hold_back(request) seconds, and cut
    every connection."""

    def __init__(self, upstream: Server):
        self.upstream = upstream
        self.swallow: Optional[Callable[[bytes, bytes], bool]] = None
        self.swallowed: List[bytes] = []
        self.delay = 0.0
        self.hold_back: Optional[Callable[[bytes], float]] = None
        self.requests: List[bytes] = []
        self.request_times: List[float] = []  # when each request reached the proxy (monotonic)
        self.writers: Set[asyncio.StreamWriter] = set()
        self.pumps: Set[asyncio.Task] = set()
        self.server: Optional[asyncio.base_events.Server] = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        try:
            sr, sw = await asyncio.open_connection(self.upstream.host, self.upstream.port)
        except OSError:
            cw.close()
            return
        self.writers |= {cw, sw}
        last = [b""]  # the last request on this connection: redis-py sends one at a time

        async def up() -> None:
            while data := await cr.read(65536):
                last[0] = data
                self.requests.append(data)
                self.request_times.append(time.monotonic())
                delay = self.delay + (self.hold_back(data) if self.hold_back is not None else 0.0)
                if delay:
                    await asyncio.sleep(delay)
                sw.write(data)
                await sw.drain()

        async def down() -> None:
            while data := await sr.read(65536):
                if self.swallow is not None and self.swallow(last[0], data):
                    self.swallowed.append(data)
                    continue
                cw.write(data)
                await cw.drain()

        pumps = [asyncio.create_task(up()), asyncio.create_task(down())]
        self.pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for p in pumps:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self.pumps.difference_update(pumps)
            for w in (cw, sw):
                w.close()
                self.writers.discard(w)

    @staticmethod
    def args(request: bytes) -> List[bytes]:
        """The arguments of one request (a RESP array of bulk strings)."""
        parts = request.split(b"\r\n")
        return parts[2::2][:int(parts[0][1:])]

    def cut(self) -> int:
        """Closes every connection through the proxy; returns how many."""
        ws = list(self.writers)
        for w in ws:
            w.close()
        return len(ws)

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        self.cut()
        await self.server.wait_closed()
        while self.pumps:
            await asyncio.sleep(0.01)

"""uvicorn's HTTP/1.1 protocol with a deadline on a request's headers.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``) but not a client that
connects and sends its headers a byte at a time, or never: such a connection stays open for
as long as the client likes, and enough of them use up the worker's file descriptors. This
protocol closes a connection whose next request's headers are not complete within
``GROUNDLOCK_READ_TIMEOUT_SECONDS`` (:class:`~groundlock.serve.limits.ServeLimits`) of its
first byte, or of the connection's start. The body then has its own deadline of the same
length, in the app's gate, before the request takes an in-flight slot. And a client that
stops reading its responses (pipelining requests without reading the answers, so writing
pauses) is cut after the same time: uvicorn would keep writing to it forever.

A subclass of uvicorn's own ``h11`` protocol (``groundlock serve`` passes it as
``http=``), not a re-implementation: only the timers are added. Hand-written because neither
uvicorn nor h11 offers a header timeout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from typing_extensions import override
from uvicorn.protocols.http.h11_impl import H11Protocol

from groundlock.serve.limits import ServeLimits

__all__ = ["UVICORN_OPTIONS", "HeaderTimedH11Protocol"]


def _read_timeout() -> float:
    """Read per connection (a few microseconds), so a test can set it in the environment."""
    return ServeLimits.from_env().read_timeout_seconds


class HeaderTimedH11Protocol(H11Protocol):
    """``H11Protocol`` that closes a connection whose request headers take too long."""

    _header_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    @override
    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    @override
    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is None or self.cycle.response_complete:
            self._arm()  # between requests: the next one's headers are (still) coming
        else:
            self._disarm()  # the headers are in; the gate times the body

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_write_timer()
        super().connection_lost(exc)

    @override
    def pause_writing(self) -> None:
        # The client stopped reading what it asked for (its socket buffer is full): the same
        # read timeout bounds how long it may keep the connection, and a slot, so.
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(_read_timeout(), self._not_reading)

    @override
    def resume_writing(self) -> None:
        self._stop_write_timer()
        super().resume_writing()

    def _stop_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _not_reading(self) -> None:
        self._write_timer = None
        if not self.transport.is_closing():
            self.transport.abort()

    def _arm(self) -> None:
        if self._header_timer is None and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(_read_timeout(), self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if (self.cycle is None or self.cycle.response_complete) and not (
            self.transport.is_closing()
        ):
            self.transport.close()


UVICORN_OPTIONS: dict[str, Any] = {
    # Headers (and unread responses) under the read timeout: uvicorn has no such limit.
    "http": "groundlock.serve.protocol:HeaderTimedH11Protocol",
    # The client's address is the socket's: a trusted X-Forwarded-For would let one client
    # pass as many and escape the per-client limit (behind a proxy, use API keys).
    "proxy_headers": False,
}
"""What ``groundlock serve`` passes to uvicorn beside host, port and workers."""

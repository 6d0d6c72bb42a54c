"""uvicorn's HTTP/1.1 protocol with a deadline on a request's headers.

uvicorn bounds an idle keep-alive connection (``timeout_keep_alive``) but not a client that
connects and sends its headers a byte at a time, or never: such a connection stays open for
as long as the client likes, and enough of them use up the worker's file descriptors. This
protocol closes a connection whose next request's headers are not complete within
``GROUNDLOCK_READ_TIMEOUT_SECONDS`` (:class:`~groundlock.serve.limits.ServeLimits`) of its
first byte, or of the connection's start. The body then has its own deadline of the same
length, in the app's gate, before the request takes an in-flight slot.

A subclass of uvicorn's own ``h11`` protocol (``groundlock serve`` passes it as
``http=``), not a re-implementation: only the timer is added. Hand-written because neither
uvicorn nor h11 offers a header timeout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from typing_extensions import override
from uvicorn.protocols.http.h11_impl import H11Protocol

from groundlock.serve.limits import ServeLimits

__all__ = ["HeaderTimedH11Protocol"]


def _read_timeout() -> float:
    """Read per connection (a few microseconds), so a test can set it in the environment."""
    return ServeLimits.from_env().read_timeout_seconds


class HeaderTimedH11Protocol(H11Protocol):
    """``H11Protocol`` that closes a connection whose request headers take too long."""

    _header_timer: asyncio.TimerHandle | None = None

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
        super().connection_lost(exc)

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

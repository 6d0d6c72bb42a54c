"""A loopback HTTP server that speaks enough of OpenAI's protocol for the real clients.

Tests point the real ``ChatOpenAI`` / ``AzureChatOpenAI`` / OpenAI SDK at it. Each request
takes the next scripted step (a reply, an HTTP error, a slow reply, a dropped connection);
every request is recorded with its path, headers, raw body and arrival time.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A successful completion."""

    text: str = "The seal is replaced every 500 hours. [C0]"
    model: str = "gpt-4.1-mini-2025-04-14"
    finish: str = "stop"
    """stop | length | content_filter (mapped to the Responses API's incomplete reasons)."""
    seconds_per_chunk: float = 0.0
    """For a streamed request: the pause before each chunk (the text is sent word by word)."""


@dataclass(frozen=True)
class Error:
    """An HTTP error with an OpenAI-shaped body."""

    status: int
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted failure"


@dataclass(frozen=True)
class Slow:
    """Answer only after ``seconds`` (longer than the client's timeout: a read timeout)."""

    seconds: float


@dataclass(frozen=True)
class Drop:
    """Close the connection without any response."""


Step = Reply | Error | Slow | Drop


@dataclass(frozen=True)
class Captured:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


class FakeOpenAI:
    """Start with ``with FakeOpenAI() as server:``; script with ``server.script(...)``."""

    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        self.requests: list[Captured] = []
        self.stream_ends: list[float] = []
        """When each streamed reply's last byte was written (time.monotonic)."""
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False  # a handler still in a Slow step must not hold us
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *steps: Step) -> None:
        self.steps.extend(steps)

    def next_step(self) -> Step:
        with self._lock:
            return self.steps.popleft() if self.steps else Reply()

    def record(self, captured: Captured) -> None:
        with self._lock:
            self.requests.append(captured)

    def record_stream_end(self, at: float) -> None:
        with self._lock:
            self.stream_ends.append(at)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.fake.record(
            Captured(
                self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
            )
        )
        step = self.fake.next_step()
        if isinstance(step, Drop):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if isinstance(step, Slow):
            time.sleep(step.seconds)
            step = Reply()
        if isinstance(step, Error):
            error = {"message": step.message, "type": "scripted", "param": None, "code": step.code}
            self._send(step.status, {"error": error}, step.headers)
            return
        responses = self.path.split("?")[0].endswith("/responses")
        if json.loads(body or b"{}").get("stream"):
            if responses:
                self._stream_responses(step)
            else:
                self._stream_chat(step, json.loads(body))
            return
        self._send(200, _responses_body(step) if responses else _chat_body(step), {})

    def _stream_chat(self, reply: Reply, request: dict[str, Any]) -> None:
        """A chat completion streamed as server-sent events, a word a chunk, as OpenAI does."""
        words = re.findall(r"\S+\s*|\s+", reply.text)
        chunks = [{"role": "assistant", "content": ""}] + [{"content": w} for w in words]
        usage = (request.get("stream_options") or {}).get("include_usage")
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.close_connection = True
            self.end_headers()
            for index, delta in enumerate(chunks):
                if reply.seconds_per_chunk:
                    time.sleep(reply.seconds_per_chunk)
                last = index == len(chunks) - 1
                self._event(_chat_chunk(reply, delta, reply.finish if last else None))
                self.wfile.flush()
            if usage:
                self._event({**_chat_chunk(reply, None, None), "choices": [], "usage": _USAGE})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.fake.record_stream_end(time.monotonic())
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _stream_responses(self, reply: Reply) -> None:
        """A Responses API reply streamed as its typed events, a word a delta."""
        final = _responses_body(reply)
        started = {**final, "status": "in_progress", "output": [], "usage": None}
        item = {"type": "message", "id": "msg_fake_1", "status": "in_progress",
                "role": "assistant", "content": []}  # fmt: skip
        part = {"type": "output_text", "text": "", "annotations": []}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": started},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.content_part.added", "item_id": "msg_fake_1",
             "output_index": 0, "content_index": 0, "part": part},
        ]  # fmt: skip
        deltas = [
            {"type": "response.output_text.delta", "item_id": "msg_fake_1", "output_index": 0,
             "content_index": 0, "delta": word, "logprobs": []}
            for word in re.findall(r"\S+\s*|\s+", reply.text)
        ]  # fmt: skip
        events += deltas
        events.append({"type": "response.completed", "response": final})
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.close_connection = True
            self.end_headers()
            for number, event in enumerate(events):
                if reply.seconds_per_chunk and event["type"].endswith(".delta"):
                    time.sleep(reply.seconds_per_chunk)
                payload = {**event, "sequence_number": number}
                self.wfile.write(
                    f"event: {event['type']}\n".encode()
                    + b"data: " + json.dumps(payload).encode() + b"\n\n"
                )  # fmt: skip
                self.wfile.flush()
            self.fake.record_stream_end(time.monotonic())
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _event(self, payload: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            # One request per connection: clients keep no pooled sockets past a test.
            self.send_header("connection", "close")
            self.close_connection = True
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to deliver


_USAGE = {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333}


def _chat_chunk(reply: Reply, delta: dict[str, Any] | None, finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": reply.model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def _chat_body(reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text},
                "finish_reason": reply.finish,
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 321, "completion_tokens": 12, "total_tokens": 333},
    }


def _responses_body(reply: Reply) -> dict[str, Any]:
    incomplete = reply.finish != "stop"
    reason = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(reply.finish)
    return {
        "id": "resp_fake_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": reason} if incomplete else None,
        "error": None,
        "model": reply.model,
        "output": [
            {
                "type": "message",
                "id": "msg_fake_1",
                "status": "incomplete" if incomplete else "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 321,
            "output_tokens": 12,
            "total_tokens": 333,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }

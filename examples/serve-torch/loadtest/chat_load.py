"""Streamed chat completions under load: time to first token and tokens/s (scripts/loadtest --model tiny-lm).

wrk measures whole answers; a streamed reply's figures are when its first token arrives and how fast
the rest follow, so this client reads the server-sent events itself: ``streams`` clients on one
asyncio loop, each with one keep-alive HTTP/1.1 connection, each sending one streamed request
(``"stream": true``, ``stream_options.include_usage``) after the other until ``seconds`` have
passed (a reply under way then is read to its end; every reply is bounded by ``REPLY_TIMEOUT``).

For each reply: its time to first token (from writing the request to the first event with text),
its completion tokens (the usage chunk's), and its whole time. A cell's figures: the time to
first token's p50 and p99, the replies' tokens/s (completion tokens over the reply's whole time)
p50 and minimum, the total tokens/s (every reply's tokens over the time from the first request to
the last reply's end), replies and errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np

TINY_LM = "tiny-lm"
REPLY_TIMEOUT = 120.0  # the longest one reply may take before the cell fails
MAX_LINE = 1 << 16


@dataclass
class Reply:
    """One streamed reply: its text, completion tokens, time to first token and whole time (seconds)."""

    content: str
    tokens: int
    ttft_s: float
    total_s: float
    finish_reason: str


@dataclass
class Cell:
    """The figures of ``streams`` concurrent streams."""

    streams: int
    replies: int
    errors: int
    tokens: int
    wall_s: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    stream_tps_p50: float
    stream_tps_min: float
    first_error: str

    @property
    def total_tps(self) -> float:
        """Every reply's tokens over the cell's time."""
        return self.tokens / self.wall_s if self.wall_s > 0 else 0.0


class ChatError(Exception):
    """A reply that was not a complete stream of events (status, malformed event, no ``[DONE]``)."""


def request_body(prompt: str, max_tokens: int, *, stream: bool = True, temperature: float = 0.0) -> bytes:
    """Return a chat completions request of one user message."""
    body: dict[str, object] = {
        "model": TINY_LM,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": temperature,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return json.dumps(body).encode()


class Connection:
    """One keep-alive HTTP/1.1 connection to a service on 127.0.0.1."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def close(self) -> None:
        """Close the connection, if open."""
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def post(self, body: bytes) -> tuple[int, dict[str, str], asyncio.StreamReader]:
        """Send ``POST /v1/chat/completions``; return the status, the headers and the reader at the body."""
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=MAX_LINE)
        assert self.reader is not None
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ChatError("the service closed the connection before answering")
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers, self.reader


async def _chunks(reader: asyncio.StreamReader, headers: dict[str, str]) -> AsyncIterator[bytes]:
    """Yield the body's bytes as they arrive: chunked transfer encoding, a Content-Length, or to the close."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size_line = await reader.readline()
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while data := await reader.read(MAX_LINE):
            yield data


async def stream_once(conn: Connection, body: bytes) -> Reply:
    """Send one streamed request; read its events to ``[DONE]``; return the reply's figures."""
    started = time.perf_counter()
    status, headers, reader = await conn.post(body)
    if status != 200:
        text = b"".join([c async for c in _chunks(reader, headers)])
        await conn.close()
        raise ChatError(f"status {status}: {text[:300]!r}")
    if not headers.get("content-type", "").startswith("text/event-stream"):
        await conn.close()
        raise ChatError(f"content type {headers.get('content-type')!r}, not text/event-stream")
    content: list[str] = []
    first = -1.0
    tokens = -1
    finish = ""
    done = False
    buffer = b""
    async for data in _chunks(reader, headers):
        buffer += data
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            if not event.startswith(b"data: "):
                raise ChatError(f"not a data event: {event[:200]!r}")
            payload = event[6:]
            if payload == b"[DONE]":
                done = True
                continue
            chunk = json.loads(payload)
            if "error" in chunk:
                raise ChatError(f"the stream failed: {chunk['error']}")
            if chunk.get("usage"):
                tokens = int(chunk["usage"]["completion_tokens"])
            for choice in chunk.get("choices", []):
                piece = choice.get("delta", {}).get("content")
                if piece:
                    if first < 0:
                        first = time.perf_counter() - started
                    content.append(piece)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
    if not done or tokens < 0:
        await conn.close()
        raise ChatError(f"the stream ended without {'[DONE]' if not done else 'its usage chunk'}")
    if "content-length" not in headers and headers.get("transfer-encoding", "").lower() != "chunked":
        await conn.close()  # read to the close: the connection is gone
    total = time.perf_counter() - started
    return Reply("".join(content), tokens, first if first >= 0 else total, total, finish)


async def whole_once(conn: Connection, body: bytes) -> tuple[str, int, str]:
    """Send one request without ``stream``; return its content, completion tokens and finish reason."""
    status, headers, reader = await conn.post(body)
    text = b"".join([c async for c in _chunks(reader, headers)])
    if status != 200:
        raise ChatError(f"status {status}: {text[:300]!r}")
    answer = json.loads(text)
    choice = answer["choices"][0]
    return choice["message"]["content"], int(answer["usage"]["completion_tokens"]), choice["finish_reason"]


async def _client(port: int, prompts: list[str], offset: int, max_tokens: int, until: float,
                  replies: list[Reply], errors: list[str]) -> None:  # fmt: skip
    conn = Connection(port)
    i = offset
    try:
        while time.perf_counter() < until:
            body = request_body(prompts[i % len(prompts)], max_tokens)
            i += 1
            try:
                replies.append(await asyncio.wait_for(stream_once(conn, body), REPLY_TIMEOUT))
            except (ChatError, OSError, asyncio.IncompleteReadError, ValueError, TimeoutError) as e:
                errors.append(f"{type(e).__name__}: {e}")
                await conn.close()
    finally:
        await conn.close()


def load(port: int, streams: int, seconds: float, prompts: list[str], max_tokens: int) -> Cell:
    """Run ``streams`` clients for ``seconds`` (each reply read to its end) and return the cell's figures."""

    async def run() -> tuple[list[Reply], list[str], float]:
        replies: list[Reply] = []
        errors: list[str] = []
        started = time.perf_counter()
        until = started + seconds
        clients = [_client(port, prompts, k * 7, max_tokens, until, replies, errors) for k in range(streams)]
        await asyncio.wait_for(asyncio.gather(*clients), seconds + REPLY_TIMEOUT + 30)
        return replies, errors, time.perf_counter() - started

    replies, errors, wall = asyncio.run(run())
    ttft = np.array([r.ttft_s for r in replies]) * 1000 if replies else np.zeros(1)
    tps = np.array([r.tokens / r.total_s for r in replies]) if replies else np.zeros(1)
    return Cell(
        streams=streams, replies=len(replies), errors=len(errors), tokens=sum(r.tokens for r in replies),
        wall_s=wall, ttft_p50_ms=float(np.percentile(ttft, 50)), ttft_p99_ms=float(np.percentile(ttft, 99)),
        stream_tps_p50=float(np.percentile(tps, 50)), stream_tps_min=float(tps.min()),
        first_error=errors[0] if errors else "",
    )  # fmt: skip


def check_greedy(ports: dict[str, int], prompts: list[str], max_tokens: int) -> str:
    """Fail unless every service's greedy reply to each prompt, streamed and whole, is the first service's.

    The replies' texts and completion token counts must be equal: the same weights decode the
    same tokens greedily, whichever service streams them.
    """

    async def replies(port: int) -> list[tuple[str, int, str, str, int]]:
        conn = Connection(port)
        got = []
        try:
            for p in prompts:
                streamed = await asyncio.wait_for(stream_once(conn, request_body(p, max_tokens)), REPLY_TIMEOUT)
                whole = await asyncio.wait_for(whole_once(conn, request_body(p, max_tokens, stream=False)),
                                               REPLY_TIMEOUT)  # fmt: skip
                got.append((streamed.content, streamed.tokens, whole[0], whole[1], len(p)))
        finally:
            await conn.close()
        return got

    answers = {key: asyncio.run(replies(port)) for key, port in ports.items()}
    keys = list(answers)
    base = answers[keys[0]]
    for key in keys:
        for i, (streamed, tokens, whole, whole_tokens, _) in enumerate(answers[key]):
            if streamed != whole or tokens != whole_tokens:
                msg = (f"{key}: prompt {i}: the streamed reply ({tokens} tokens) {streamed[:80]!r} is not the "
                       f"whole one ({whole_tokens} tokens) {whole[:80]!r}")  # fmt: skip
                raise RuntimeError(msg)
            if (streamed, tokens) != base[i][:2]:
                msg = (f"{key} decodes prompt {i} otherwise than {keys[0]}: {tokens} tokens {streamed[:80]!r} "
                       f"against {base[i][1]} tokens {base[i][0][:80]!r}")  # fmt: skip
                raise RuntimeError(msg)
    tokens = sum(t for _, t, _, _, _ in base)
    return (f"the services' greedy replies to {len(prompts)} prompts are equal, streamed and whole "
            f"({tokens} tokens, at most {max_tokens} a reply)")  # fmt: skip

"""Real-time sessions on the speech server's WebSocket, paced as a live caller's audio."""

from __future__ import annotations

import asyncio
import time

import aiohttp

PATH = "/v1/audio/stream"


async def session(url: str, token: str, audio: bytes, *, rate: int = 16000, chunk_s: float = 0.1,
                  speed: float = 1.0, chunk_bytes: int | None = None, send_rate: bool = True,
                  settle_s: float = 0.0) -> dict:
    """Streams ``audio`` and collects every frame; returns the frames by kind, with arrival times,
    and when eof was sent. ``send_rate=False`` leaves sample_rate out of the config (its default).
    ``settle_s``: after the audio, silence goes on in real time until a pass run on the silence
    leaves nothing unconfirmed, or for that many seconds at most: a pause as long as the server
    needs, however loaded the machine, rather than one of a fixed length."""
    frames: dict = {"partial": [], "final": [], "result": [], "error": [], "close": None, "eof_at": None}
    step = chunk_bytes or int(rate * chunk_s) * 2
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(f"{url.replace('http', 'ws')}{PATH}?token={token}") as ws:
            async def receive():
                async for message in ws:
                    frame = message.json()
                    frames[frame["type"]].append((time.monotonic(), frame))
                frames["close"] = ws.close_code

            async def send_paced(data: bytes, until=lambda: False):
                started = time.monotonic()
                for i, offset in enumerate(range(0, len(data), step)):
                    if until():
                        return
                    await ws.send_bytes(data[offset:offset + step])
                    # Real-time pacing against the clock, so slow sends do not accumulate.
                    delay = started + (i + 1) * (step / 2 / rate) / speed - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)

            reader = asyncio.create_task(receive())
            await ws.send_json({"type": "config", "sample_rate": rate} if send_rate else {"type": "config"})
            await send_paced(audio)
            if settle_s:
                spoken = time.monotonic()
                # Settled: a partial that came after the speech says no words wait for confirmation.
                await send_paced(bytes(2 * int(rate * settle_s)),
                                 until=lambda: any(at > spoken + 1.0 and not f["text"] for at, f in frames["partial"]))
            frames["eof_at"] = time.monotonic()
            await ws.send_json({"type": "eof"})
            await asyncio.wait_for(reader, timeout=120)
    return frames


def run(coro):
    return asyncio.run(coro)

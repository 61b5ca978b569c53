"""A loopback OpenAI-compatible server answering NOTES_PAIR prompts (``scale_models.reply_for``)
after a fixed latency, HTTP/1.1 keep-alive: ``python notes_server.py PORT LATENCY_S`` prints
``ready`` once it listens."""

from __future__ import annotations

import asyncio
import json
import sys
from types import SimpleNamespace

from scale_models import reply_for


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency_s: float) -> None:
    """Answer requests on one connection until the client closes it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = json.loads(await reader.readexactly(length))
            await asyncio.sleep(latency_s)
            text = reply_for([SimpleNamespace(**m) for m in body["messages"]])  # type: ignore[misc]
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            out = json.dumps({"object": "chat.completion", "model": "notes", "choices": [choice]}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(out))
            writer.write(out)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, latency_s: float) -> None:
    """Serve on 127.0.0.1:port until killed."""
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency_s), "127.0.0.1", port, backlog=4096)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))

"""A tiny agent process for test_stdio: prints garbage on "stdout" and runs a child that writes to its
stdout and reads its stdin, yet the protocol stream must stay clean."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio

from acp_agent.protocol import Connection, RequestContext
from acp_agent.protocol.stdio import open_stdio


class EchoHandler:
    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any:
        print("stray print from a handler")
        child = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; sys.stdout.write('child output, stdin bytes: %d\\n' % len(sys.stdin.read()))",
                ],
                check=True,
                stdout=None,
            )
        )
        return {"method": method, "params": params, "child": child.returncode}

    async def handle_notification(self, method: str, params: Any) -> None:
        print(f"notification {method}")


async def main() -> None:
    receive, send = open_stdio()
    print("garbage at start-up", flush=True)
    await Connection(receive, send, EchoHandler()).serve()


if __name__ == "__main__":
    anyio.run(main)

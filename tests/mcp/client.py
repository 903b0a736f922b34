"""Drive `oncepost mcp` over stdio with the official Python SDK (PyPI `mcp`), one new server per run.

Usage:
  client.py tools                    list the tools: names, annotations, input schemas, the instructions
  client.py call NAME JSON_ARGS      call one tool (a new server, a new session, new request ids)
  client.py twice NAME JSON_ARGS     call it twice in one session (the second call is a client's retry)

Environment: ONCEPOST_BIN is the server binary; every other ONCEPOST_* variable is passed to the server;
ONCEPOST_MCP_ARGS is a JSON list of extra `oncepost mcp` arguments. With ONCEPOST_MCP_URL the client
connects to a running `oncepost mcp --http` there instead (streamable HTTP), sending ONCEPOST_MCP_BEARER
as its bearer token. Prints one JSON object per call: the
result (is_error, structured_content, the content block types, how many progress notifications came), or
{"exception": ...} when the server went away mid-call.
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def server() -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k.startswith("ONCEPOST_") and k != "ONCEPOST_BIN"}
    env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    args = ["mcp"] + json.loads(os.environ.get("ONCEPOST_MCP_ARGS", "[]"))
    return StdioServerParameters(command=os.environ["ONCEPOST_BIN"], args=args, env=env)


async def call(session: ClientSession, name: str, arguments: dict) -> dict:
    progress = []

    async def on_progress(value, total, message):
        progress.append(message)

    try:
        r = await session.call_tool(name, arguments, progress_callback=on_progress)
    except Exception as e:  # the server died mid-call (a failpoint): report it, do not crash the harness
        return {"exception": f"{type(e).__name__}: {e}"}
    return {
        "is_error": r.is_error,
        "structured_content": r.structured_content,
        "content": [c.type for c in r.content],
        "progress": len(progress),
    }


def transport():
    url = os.environ.get("ONCEPOST_MCP_URL")
    if url is None:
        return stdio_client(server())
    bearer = os.environ.get("ONCEPOST_MCP_BEARER", "")
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
    return streamable_http_client(url, http_client=http)


async def main() -> None:
    mode = sys.argv[1]
    try:
        async with transport() as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                if mode == "tools":
                    tools = await session.list_tools()
                    out = {
                        "instructions": init.instructions,
                        "tools": [
                            {
                                "name": t.name,
                                "annotations": t.annotations.model_dump(exclude_none=True, by_alias=True)
                                if t.annotations
                                else None,
                                "input_schema": t.input_schema,
                            }
                            for t in tools.tools
                        ],
                    }
                    print(json.dumps(out), flush=True)
                elif mode in ("call", "twice"):
                    name, arguments = sys.argv[2], json.loads(sys.argv[3])
                    for _ in range(2 if mode == "twice" else 1):
                        print(json.dumps(await call(session, name, arguments)), flush=True)
                else:
                    sys.exit(f"unknown mode {mode}")
    except Exception as e:  # closing a session whose server already died
        print(json.dumps({"exception": f"{type(e).__name__}: {e}"}), flush=True)


asyncio.run(main())

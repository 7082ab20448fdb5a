"""An MCP client on the official Python SDK (PyPI `mcp`), driven by the runner's MCP tests.

Usage:
  client.py http URL TOKEN      calls over streamable HTTP with `Authorization: Bearer TOKEN`
  client.py stdio CMD [ARG...]  calls over stdio to the command it starts
  client.py status URL TOKEN    the HTTP status of a bare initialize POST (for 401 checks)

The calls to make are a JSON list on stdin: [{"tool": NAME, "args": {...}}, ...]. Prints one JSON
object: {"server": NAME, "tools": [{name, inputSchema, outputSchema}], "calls": [{isError,
text, structured}]}.
"""

import json
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation

CLIENT = Implementation(name="oxydra-python-test", version="1.0")


async def run(session, calls):
    init = await session.initialize()
    listed = await session.list_tools()
    tools = [
        {"name": t.name, "inputSchema": t.input_schema, "outputSchema": t.output_schema}
        for t in listed.tools
    ]
    results = []
    for call in calls:
        r = await session.call_tool(call["tool"], call.get("args") or {})
        text = "".join(getattr(c, "text", "") for c in r.content)
        results.append(
            {"isError": bool(r.is_error), "text": text, "structured": r.structured_content}
        )
    return {"server": init.server_info.name, "tools": tools, "calls": results}


async def over_http(url, token, calls):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write, client_info=CLIENT) as session:
                return await run(session, calls)


async def over_stdio(command, calls):
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=CLIENT) as session:
            return await run(session, calls)


async def status(url, token):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient() as client:
        r = await client.post(url, json=body, headers=headers)
        return {"status": r.status_code, "body": r.text[:500]}


def main():
    mode = sys.argv[1]
    if mode == "status":
        out = anyio.run(status, sys.argv[2], sys.argv[3])
    else:
        calls = json.load(sys.stdin)
        if mode == "http":
            out = anyio.run(over_http, sys.argv[2], sys.argv[3], calls)
        else:
            out = anyio.run(over_stdio, sys.argv[2:], calls)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

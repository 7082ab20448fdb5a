"""A real MCP server written with the official Python SDK, for the client's tests.

    demo.py stdio
    demo.py http PORT

Its tools behave well (echo, add, picture, whereami; hang reports its progress), badly (crash, hang, flood) or lie (liar's
input schema names a type that does not exist); `grow` adds a tool and says the list changed.
Each start appends a line to `starts.log` in the working directory.
"""

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, ToolAnnotations

app = MCPServer("demo")

with open("starts.log", "a") as log:
    log.write(f"{os.getpid()}\n")


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    """Says the text back."""
    return f"echo: {text}"


@app.tool()
def add(a: int, b: int) -> dict:
    """Adds two integers."""
    return {"sum": a + b}


@app.tool()
def picture() -> list:
    """A small picture and a link."""
    return [
        ImageContent(type="image", data="iVBORw0KGgo" * 100, mimeType="image/png"),
        "see also https://example.org/pic",
    ]


@app.tool()
def whereami() -> str:
    """The server's working directory and environment variable names."""
    return f"cwd={os.getcwd()} env={','.join(sorted(os.environ))}"


@app.tool()
def crash() -> str:
    """Exits the server at once."""
    sys.stderr.write("demo: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
async def hang(seconds: float, ctx: Context) -> str:
    """Sleeps for `seconds`, reporting its progress every tenth of a second."""
    steps = max(1, round(seconds * 10))
    for i in range(1, steps + 1):
        await asyncio.sleep(seconds / steps)
        await ctx.report_progress(i, steps, f"slept {i / 10:.1f}s")
    return "woke up"


@app.tool()
def flood(lines: int) -> str:
    """Returns `lines` lines of text."""
    return "\n".join(f"line {i} " + "x" * 60 for i in range(lines))


@app.tool()
def liar(x: int) -> str:
    """Its schema lies."""
    return "never offered"


app._tool_manager._tools["liar"].parameters = {
    "type": "object",
    "properties": {"x": {"type": "banana"}},
}


def late(word: str) -> str:
    """A tool added while the session runs."""
    return f"late: {word}"


@app.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `late` and tells the client its tool list changed."""
    app.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        app.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()

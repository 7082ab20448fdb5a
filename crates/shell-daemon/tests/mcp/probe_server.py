"""A FastMCP stdio server (the official Python SDK) that reports what it can see: the tests run
it through the shell daemon and ask it to read, write and describe itself."""

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("probe")


@app.tool()
def read(path: str) -> str:
    """The file's text, or DENIED <errno name> when it cannot be opened."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "OK " + f.read()
    except OSError as e:
        return "DENIED " + (os.strerror(e.errno) if e.errno else str(e))


@app.tool()
def write(path: str, text: str) -> str:
    """Writes text to path: OK, or DENIED <reason>."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return "OK"
    except OSError as e:
        return "DENIED " + (os.strerror(e.errno) if e.errno else str(e))


@app.tool()
def whoami() -> dict:
    """The server's uid, working directory, process group and environment names."""
    return {
        "uid": os.getuid(),
        "cwd": os.getcwd(),
        "pgid": os.getpgid(0),
        "pid": os.getpid(),
        "env": sorted(os.environ.keys()),
        "probe": os.environ.get("PROBE_SETTING", ""),
    }


if __name__ == "__main__":
    app.run()

"""The agent's side of an MCP server's pipe, in the standard library only (it runs as the
agent's uid, which cannot reach a Python installed under /root): connects to the shell daemon's
socket (argv[1]), proves the secret read from stdin, asks for the server argv[2] (an mcp_spawn
JSON object), then speaks JSON-RPC: initialize, then each tools/call of argv[3] (a JSON list of
[name, arguments]). Prints the daemon's answer line, then one line per call: the tool's text."""

import json
import socket
import sys

sock = socket.socket(socket.AF_UNIX)
sock.settimeout(60)
sock.connect(sys.argv[1])
reader = sock.makefile("rb")


def send(message):
    sock.sendall((json.dumps(message) + "\n").encode())


def answer(wanted):
    while True:
        line = reader.readline()
        if not line:
            sys.exit("the pipe closed")
        message = json.loads(line)
        if message.get("id") == wanted:
            return message


send({"auth": sys.stdin.readline().strip()})
send({"mcp_spawn": json.loads(sys.argv[2])})
print(reader.readline().decode().strip(), flush=True)
send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "oxydra-test", "version": "0"}}})
answer(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
for n, (name, arguments) in enumerate(json.loads(sys.argv[3]), start=1):
    send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
          "params": {"name": name, "arguments": arguments}})
    print(json.dumps(answer(n)["result"]["content"][0]["text"]), flush=True)

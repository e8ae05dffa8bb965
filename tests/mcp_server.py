#!/usr/bin/env python3
"""A small MCP server over stdio for tests/user_tools.rs. Tools: `echo` (text back), `fail`
(an isError result), `die` (exits mid-call), `hang` (never answers). Writes its pid to the file
named by MCP_PID_FILE, logs to stderr, and pings the client once before its first answer."""
import json, os, sys, time

if os.environ.get("MCP_PID_FILE"):
    with open(os.environ["MCP_PID_FILE"], "w") as f:
        f.write(str(os.getpid()))
print("test server starting", file=sys.stderr, flush=True)
if os.environ.get("MCP_CRASH"):
    print("cannot start: MCP_CRASH is set", file=sys.stderr, flush=True)
    sys.exit(3)

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "die", "description": "Exits.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
]

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

pinged = False
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None or method is None:
        continue  # a notification, or the answer to our ping
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "test", "version": "1"}}})
    elif method == "tools/list":
        if not pinged:
            pinged = True
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            print("not json, a stray log line on stdout", flush=True)
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = message["params"]["name"], message["params"].get("arguments", {})
        if name == "echo":
            send({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "echo: " + args.get("text", "")}]}})
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "it went wrong"}], "isError": True}})
        elif name == "die":
            print("dying on purpose", file=sys.stderr, flush=True)
            sys.exit(7)
        elif name == "hang":
            time.sleep(3600)
        else:
            send({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool " + name}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no " + method}})

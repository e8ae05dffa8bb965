#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for benchmarks and hands-on checks. Loopback only.

Stateless: the reply depends only on how many tool results the request's history holds, so
the same plan serves any number of runs. The plan (JSON, --plan) is a list of steps, each
either {"call": NAME, "args": {...}} (optionally "times": N) or {"text": "..."}; after the
last step the server answers "done." Streams (SSE) when the request asks for it.

  python3 bench/mock.py --port 0 --plan '[{"call":"bash","args":{"command":"echo hi"},"times":200}]'

prints the port it listens on as its first line.
"""
import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def expand(plan):
    steps = []
    for step in plan:
        steps.extend([step] * step.get("times", 1))
    return steps


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: without this, Nagle's algorithm and the
    # client's delayed ACK add 40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    steps = []

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.endswith("/models"):
            self.send(200, "application/json", json.dumps({"data": [{"id": "mock"}]}).encode())
        else:
            self.send(404, "application/json", b'{"error":{"message":"no such route"}}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length))
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        step = self.steps[done] if done < len(self.steps) else {"text": "done."}
        stream = request.get("stream", False)
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if "call" in step:
            call = {"id": f"call_{done}", "type": "function",
                    "function": {"name": step["call"], "arguments": json.dumps(step["args"])}}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": step["text"]}, "stop"
        if not stream:
            body = {"id": "x", "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
            self.send(200, "application/json", json.dumps(body).encode())
            return
        chunks = []
        if "call" in step:
            call = dict(message["tool_calls"][0], index=0)
            chunks.append({"tool_calls": [call]})
        else:
            text = step["text"]
            chunks.extend({"content": text[i:i + 4]} for i in range(0, len(text), 4))
        events = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in chunks]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        events.append({"choices": [], "usage": usage})
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.send(200, "text/event-stream", body.encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--plan", default="[]")
    args = parser.parse_args()
    Handler.steps = expand(json.loads(args.plan))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for benchmarks and hands-on checks. Loopback only.

Stateless: the reply depends only on how many tool results the request's history holds, so
the same plan serves any number of runs. The plan (JSON, --plan) is a list of steps, each
either {"call": NAME, "args": {...}} (optionally "times": N) or {"text": "..."}; after the
last step the server answers "done." Streams (SSE) when the request asks for it.

  python3 bench/mock.py --port 0 --plan '[{"call":"bash","args":{"command":"echo hi"},"times":200}]'

prints the port it listens on as its first line.

With --window N it plays a llama-server started with `-c N`: /props says n_ctx, each request
is charged its compact JSON bytes / 4 in tokens, one over the window gets llama-server's 400,
and steps are served in order (a compacted history holds fewer tool results). A request
without tools (turn's summary request) gets a summary. GET /stats returns what happened since
the last /stats: requests, overflows, prompt tokens, cache breaks (requests that do not extend
the previous request's messages) and the tokens a single-slot prefix cache would recompute.
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


def fresh_stats():
    return {"requests": 0, "overflows": 0, "summaries": 0, "prompt_tokens": 0, "cache_breaks": 0,
            "recomputed_tokens": 0, "largest": 0}


def common_prefix(a, b):
    """Bytes of the JSON text two message lists share from the start."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            # The part of the first differing message that is still the same.
            return n + next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
        n += len(x)
    return n


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes: without this, Nagle's algorithm and the
    # client's delayed ACK add 40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    steps = []
    window = None
    served = 0
    stats = fresh_stats()
    last_chat = None   # the messages of the last request with tools, as JSON texts
    last_any = None    # ... of the last request of any kind (what one slot's cache holds)

    def log_message(self, *args):
        pass

    def send(self, status, content_type, body):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        cls = type(self)
        if self.path.endswith("/models"):
            entry = {"id": "mock", "owned_by": "llamacpp"} if cls.window else {"id": "mock"}
            self.send(200, "application/json", json.dumps({"data": [entry]}).encode())
        elif self.path == "/props" and cls.window:
            body = {"default_generation_settings": {"n_ctx": cls.window}, "total_slots": 1}
            self.send(200, "application/json", json.dumps(body).encode())
        elif self.path == "/stats":
            stats, cls.stats, cls.served, cls.last_chat, cls.last_any = cls.stats, fresh_stats(), 0, None, None
            self.send(200, "application/json", json.dumps(stats).encode())
        else:
            self.send(404, "application/json", b'{"error":{"message":"no such route"}}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length))
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if type(self).window:
            step = self.charge(request)
            if step is None:
                return
            usage = {"prompt_tokens": step.pop("tokens"), "completion_tokens": 20}
            done = step.pop("index", done)
        else:
            step = self.steps[done] if done < len(self.steps) else {"text": "done."}
        stream = request.get("stream", False)
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

    def charge(self, request):
        """Window mode: counts the request, refuses it if it is too large, else picks the step."""
        cls = type(self)
        messages = [json.dumps(m, separators=(",", ":")) for m in request["messages"]]
        tools = json.dumps(request["tools"], separators=(",", ":")) if "tools" in request else ""
        tokens = -(-(len("[" + ",".join(messages) + "]") + len(tools)) // 4)
        stats = cls.stats
        stats["requests"] += 1
        if tokens + request.get("max_tokens", 0) > cls.window:
            stats["overflows"] += 1
            message = f"request ({tokens} tokens) exceeds the available context size ({cls.window} tokens)"
            body = {"error": {"code": 400, "message": message, "type": "exceed_context_size_error",
                              "n_prompt_tokens": tokens, "n_ctx": cls.window}}
            self.send(400, "application/json", json.dumps(body).encode())
            return None
        stats["prompt_tokens"] += tokens
        stats["largest"] = max(stats["largest"], tokens)
        shared = common_prefix(cls.last_any, messages) if cls.last_any else 0
        whole = sum(len(m) for m in messages)
        stats["recomputed_tokens"] += -(-(whole - shared) // 4)
        cls.last_any = messages
        if "tools" not in request:
            stats["summaries"] += 1
            return {"text": "Summary: the steps so far ran and printed their lines; go on.", "tokens": tokens}
        if cls.last_chat is not None and messages[:len(cls.last_chat)] != cls.last_chat:
            stats["cache_breaks"] += 1
        cls.last_chat = messages
        step = cls.steps[cls.served] if cls.served < len(cls.steps) else {"text": "done."}
        cls.served += 1
        return dict(step, tokens=tokens, index=cls.served)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--plan", default="[]")
    parser.add_argument("--window", type=int, default=0)
    args = parser.parse_args()
    Handler.steps = expand(json.loads(args.plan))
    Handler.window = args.window
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

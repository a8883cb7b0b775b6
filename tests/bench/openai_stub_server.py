#!/usr/bin/env python3
"""A small OpenAI-compatible server for the benchmark tests (Python 3 standard library only).

Serves on 127.0.0.1 (port 0: any free port; the port is printed on stdout as "PORT <n>"):
  GET  /v1/models                -> {"data": [{"id": MODEL}]}
  POST /v1/chat/completions      -> text/event-stream, chunked
  POST /v1/completions           -> text/event-stream, chunked
Streaming: sleeps --prefill-delay seconds, then sends max_tokens chunks of one "token" each
("tok0 ", "tok1 ", ...) with --token-delay seconds between consecutive chunks, then a final
chunk with usage {prompt_tokens: number of whitespace-separated words of the prompt,
completion_tokens: max_tokens} (when stream_options.include_usage is true), then "data: [DONE]".
So a client measures ttft ~= prefill_delay and decode time ~= (max_tokens - 1) * token_delay.

--mode changes the answer: ok | http500 (HTTP 500 with a JSON error body) | malformed (the
third event is not JSON) | no-done (the stream closes without [DONE]) | no-usage (no usage
chunk) | error-event (an {"error": ...} event after two tokens).
--cert/--key serve HTTPS instead. Every request body is appended as one JSON line to --log when given.
"""
import argparse
import http.server
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--prefill-delay", type=float, default=0.2)
    ap.add_argument("--token-delay", type=float, default=0.05)
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--model", default="stub-model")
    ap.add_argument("--log", default="")
    ap.add_argument("--cert", default="", help="PEM certificate: serve HTTPS (with --key)")
    ap.add_argument("--key", default="")
    args = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):  # quiet
            pass

        def send_json(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def chunk(self, data: bytes):
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
            self.wfile.flush()

        def event(self, obj):
            payload = obj if isinstance(obj, str) else json.dumps(obj)
            self.chunk(("data: " + payload + "\n\n").encode())

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self.send_json(200, {"object": "list", "data": [{"id": args.model, "object": "model"}]})
            else:
                self.send_json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            req = json.loads(self.rfile.read(n) or b"{}")
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps({"path": self.path, "body": req}) + "\n")
            chat = self.path == "/v1/chat/completions"
            if not chat and self.path != "/v1/completions":
                self.send_json(404, {"error": {"message": "not found"}})
                return
            if args.mode == "http500":
                self.send_json(500, {"error": {"message": "stub failure", "code": 500}})
                return
            prompt = req["messages"][-1]["content"] if chat else req["prompt"]
            n_tok = int(req.get("max_tokens", 16))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            obj = "chat.completion.chunk" if chat else "text_completion"
            if chat:  # a role-only first chunk, as llama-server and vLLM send (no text: not a token)
                self.event({"object": obj, "choices": [{"index": 0, "delta": {"role": "assistant"}}]})
            time.sleep(args.prefill_delay)
            for i in range(n_tok):
                if i > 0:
                    time.sleep(args.token_delay)
                if args.mode == "malformed" and i == 2:
                    self.chunk(b"data: {this is not json\n\n")
                    continue
                if args.mode == "error-event" and i == 2:
                    self.event({"error": {"message": "stub error event"}})
                    break
                text = "tok%d " % i
                choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
                choice["finish_reason"] = "length" if i == n_tok - 1 else None
                self.event({"object": obj, "choices": [choice]})
            if args.mode != "no-usage" and req.get("stream_options", {}).get("include_usage"):
                self.event({"object": obj, "choices": [],
                            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": n_tok,
                                      "total_tokens": len(prompt.split()) + n_tok}})
            if args.mode != "no-done":
                self.event("[DONE]")
            self.chunk(b"")  # end of the chunked body
            self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""HTTPS file server for the Downloader tests (stdlib only: http.server + ssl).

  https_test_server.py --root DIR --cert server.pem --key server.key --port-file F --log F

Serves DIR/<name> at /<mode>/<name> (and /hub/<owner>/<repo>/resolve/main/<name> as "plain").
Every response carries ETag: "<sha256 hex of the content>" (the hub's convention for LFS files)
and honours Range: bytes=N- and If-Range. Modes (the first path segment):
  plain           a well-behaved server
  ignore-range    always 200 with the whole file, whatever Range says
  truncate-N      the first GET of a path announces the full Content-Length, sends N bytes and
                  closes the connection; later requests are plain
  etag-change     after the first request (HEAD or GET), the path serves <name>.v2 (other content, other ETag)
  slow-MS         sends 16 KiB chunks with MS milliseconds of sleep between them
  wrong-hash      the ETag advertises the SHA-256 of other content
Each request is appended to the log file as one JSON line {method, path, range, if_range}.
The chosen port is written to --port-file once the server listens (port 0 = any free port).
"""
import argparse
import hashlib
import http.server
import json
import os
import re
import ssl
import threading
import time

LOCK = threading.Lock()
GETS = {}  # path -> GET requests seen
ALL = {}  # path -> requests seen (any method)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _log(self):
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "range": self.headers.get("Range"),
                                "if_range": self.headers.get("If-Range")}) + "\n")

    def _resolve(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 6 and parts[0] == "hub" and parts[3:5] == ["resolve", "main"]:
            return "plain", parts[5]
        if len(parts) != 2 or parts[1] in ("", ".", ".."):
            return None, None
        return parts[0], parts[1]

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        self._log()
        mode, name = self._resolve()
        if mode is None:
            self.send_error(404)
            return
        key = self.path
        with LOCK:
            seen = GETS.get(key, 0)
            seen_all = ALL.get(key, 0)
            ALL[key] = seen_all + 1
            if not head:
                GETS[key] = seen + 1
        fname = name
        if mode == "etag-change" and seen_all >= 1:
            fname = name + ".v2"
        path = os.path.join(self.server.root, fname)
        if not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        etag = '"%s"' % (hashlib.sha256(data + b"x").hexdigest() if mode == "wrong-hash" else digest)
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and mode != "ignore-range" and (if_range is None or if_range == etag):
            m = re.fullmatch(r"bytes=(\d+)-", rng.strip())
            if m:
                start = int(m.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % len(data))
                    self.send_header("Content-Length", "0")
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                status = 206
        body = data[start:]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        if head:
            return
        if mode.startswith("truncate-") and seen == 0:
            n = int(mode.split("-", 1)[1])
            self.wfile.write(body[:n])
            self.wfile.flush()
            self.close_connection = True  # TCP close without the rest of the body
            return
        if mode.startswith("slow-"):
            delay = int(mode.split("-", 1)[1]) / 1000.0
            try:
                for i in range(0, len(body), 16384):
                    self.wfile.write(body[i:i + 16384])
                    self.wfile.flush()
                    time.sleep(delay)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            return
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.root = a.root
    server.log_path = a.log
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()

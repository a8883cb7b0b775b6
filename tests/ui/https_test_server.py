#!/usr/bin/env python3
"""HTTPS file server for the Downloader tests (stdlib only: http.server + ssl).

  https_test_server.py --root DIR --cert server.pem --key server.key --port-file F --log F

Serves DIR/<name> at /<mode>/<name>, and a Hugging Face-style hub under /hub:
  /hub/<owner>/<repo>/resolve/main/<path>   DIR/hub/<owner>/<repo>/<path> (else DIR/<last segment>), "plain"
                                            ("slow-30" for the owner "slowhub")
  /hub/api/models/<owner>/<repo>            {"id", "siblings": [{"rfilename"}]}
  /hub/api/models/<owner>/<repo>/tree/main  [{"type": "file", "path", "size", "oid", "lfs": {"oid", "size",
                                             "pointerSize"}}] (every file but *.md is "in LFS": oid = SHA-256)
  If DIR/hub/<owner>/<repo>.listing.json exists ([{"path", "size", "sha256"}]) both API answers list
  exactly that instead (names a real hub would never send, wrong hashes). Files are streamed from
  disk; digests are cached per (path, size, mtime), so large sparse files are cheap.
Every response carries ETag: "<sha256 hex of the content>" (the hub's convention for LFS files)
and honours Range: bytes=N- and If-Range. Modes (the first path segment):
  plain           a well-behaved server
  ignore-range    always 200 with the whole file, whatever Range says
  truncate-N      the first GET of a path announces the full Content-Length, sends N bytes and
                  closes the connection; later requests are plain
  etag-change     after the first request (HEAD or GET), the path serves <name>.v2 (other content, other ETag)
  slow-MS         sends 16 KiB chunks with MS milliseconds of sleep between them
  wrong-hash      the ETag advertises the SHA-256 of other content
  weak-truncate-N as truncate-N, with a weak ETag (W/"..."): an If-Range never matches it (RFC 9110
                  13.1.5: the comparison is strong), so a range with If-Range gets the whole file
  no-length       responses carry no Content-Length (HEAD), and a range past the end gets the 416's
                  "Content-Range: bytes */SIZE"
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
import urllib.parse

LOCK = threading.Lock()
GETS = {}  # path -> GET requests seen
ALL = {}  # path -> requests seen (any method)
DIGESTS = {}  # (path, size, mtime_ns, suffix) -> sha256 hex
CHUNK = 1 << 20


def digest(path, suffix=b""):
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns, suffix)
    with LOCK:
        if key in DIGESTS:
            return DIGESTS[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                break
            h.update(b)
    h.update(suffix)
    with LOCK:
        DIGESTS[key] = h.hexdigest()
    return DIGESTS[key]


def safe_join(root, rel):
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return os.path.join(root, *parts)


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
        if len(parts) >= 6 and parts[0] == "hub" and parts[3:5] == ["resolve", "main"]:
            rel = "/".join(parts[5:])
            repo_dir = os.path.join(self.server.root, "hub", parts[1], parts[2])
            full = safe_join(repo_dir, rel)
            if full is None:
                return None, None
            mode = "slow-30" if parts[1] == "slowhub" else "plain"  # owner "slowhub": a slow hub
            if os.path.isfile(full):
                return mode, os.path.relpath(full, self.server.root)
            return mode, parts[-1]
        if len(parts) != 2:
            return None, None
        name = urllib.parse.unquote(parts[1])  # "My%20Model.bin" is the file "My Model.bin"
        if name in ("", ".", "..") or "/" in name:
            return None, None
        return parts[0], name

    def _hub_listing(self, owner, repo):
        base = os.path.join(self.server.root, "hub", owner, repo)
        override = base + ".listing.json"
        if os.path.isfile(override):
            with open(override) as f:
                return json.load(f)
        out = []
        for d, _, files in os.walk(base):
            for n in sorted(files):
                full = os.path.join(d, n)
                rel = os.path.relpath(full, base).replace(os.sep, "/")
                out.append({"path": rel, "size": os.path.getsize(full),
                            "sha256": None if n.endswith(".md") else digest(full)})
        out.sort(key=lambda e: e["path"])
        return out

    def _api(self, head):
        parts = self.path.split("?")[0].strip("/").split("/")
        # hub api models <owner> <repo> [tree main]
        if len(parts) not in (5, 7) or parts[1:3] != ["api", "models"] or (len(parts) == 7 and parts[5:] != ["tree", "main"]):
            self.send_error(404)
            return
        owner, repo = parts[3], parts[4]
        if not os.path.isdir(os.path.join(self.server.root, "hub", owner, repo)) and not os.path.isfile(
                os.path.join(self.server.root, "hub", owner, repo + ".listing.json")):
            self.send_error(404)
            return
        listing = self._hub_listing(owner, repo)
        if len(parts) == 5:
            doc = {"id": owner + "/" + repo, "siblings": [{"rfilename": e["path"]} for e in listing]}
        else:
            doc = []
            for e in listing:
                entry = {"type": "file", "path": e["path"], "size": e["size"],
                         "oid": hashlib.sha1(e["path"].encode()).hexdigest()}
                if e.get("sha256"):
                    entry["lfs"] = {"oid": e["sha256"], "size": e["size"], "pointerSize": 134}
                doc.append(entry)
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        self._log()
        if self.path.startswith("/hub/api/"):
            self._api(head)
            return
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
        size = os.path.getsize(path)
        etag = '"%s"' % digest(path, b"x" if mode == "wrong-hash" else b"")
        weak = mode.startswith("weak-")
        if weak:
            etag = "W/" + etag
            mode = mode[len("weak-"):]
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if rng and mode != "ignore-range" and (if_range is None or (not weak and if_range == etag)):
            m = re.fullmatch(r"bytes=(\d+)-", rng.strip())
            if m:
                start = int(m.group(1))
                if start >= size:
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % size)
                    self.send_header("Content-Length", "0")
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return
                status = 206
        self.send_response(status)
        if mode != "no-length" or not head:
            self.send_header("Content-Length", str(size - start))
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.end_headers()
        if head:
            return
        limit = size - start
        chunk = CHUNK
        delay = 0.0
        if mode.startswith("truncate-") and seen == 0:
            limit = min(limit, int(mode.split("-", 1)[1]))
            self.close_connection = True  # TCP close without the rest of the body
        if mode.startswith("slow-"):
            delay = int(mode.split("-", 1)[1]) / 1000.0
            chunk = 16384
        try:
            with open(path, "rb") as f:
                f.seek(start)
                while limit > 0:
                    b = f.read(min(chunk, limit))
                    if not b:
                        break
                    self.wfile.write(b)
                    limit -= len(b)
                    if delay:
                        self.wfile.flush()
                        time.sleep(delay)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass


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

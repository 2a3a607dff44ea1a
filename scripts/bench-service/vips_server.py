#!/usr/bin/env python3
"""The libvips peer: the smallest thumbnail server a user would write with pyvips.

GET /PATH fetches ORIGIN/PATH with urllib, makes a 256x256 centre crop with
pyvips.Image.thumbnail_buffer(data, 256, height=256, crop='centre') and answers it as a Q80 JPEG. Python's
ThreadingHTTPServer (a thread per connection), HTTP/1.1 keep-alive like the other peers; libvips releases the
GIL while it works and uses its own thread pool. libvips' operation cache is off so a repeat is rendered again,
as the cold and hot figures assume (the hot case of this peer measures rendering, not a cache).

    vips_server.py --origin http://127.0.0.1:PORT --port 0   # prints 'listening on http://127.0.0.1:PORT'
"""
import argparse
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyvips

SIZE = 256
QUALITY = 80


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    origin = ""

    def do_GET(self):
        if self.path == "/healthz":
            return self.answer(200, b"ok\n", "text/plain")
        try:
            with urllib.request.urlopen(self.origin + self.path, timeout=20) as response:
                data = response.read()
        except urllib.error.HTTPError as error:
            return self.answer(error.code, b"source: %d\n" % error.code, "text/plain")
        except OSError as error:
            return self.answer(502, f"source: {error}\n".encode(), "text/plain")
        try:
            thumb = pyvips.Image.thumbnail_buffer(data, SIZE, height=SIZE, crop="centre")
            body = thumb.jpegsave_buffer(Q=QUALITY)
        except pyvips.Error as error:
            return self.answer(422, f"render: {error}\n".encode(), "text/plain")
        self.answer(200, body, "image/jpeg")

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--origin", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    pyvips.cache_set_max(0)
    Handler.origin = args.origin.rstrip("/")
    # A listen backlog of 128 instead of socketserver's 5, so that 64 connections opened at once by the overload
    # case are not dropped and retried a second later (a kernel artefact, not this server's speed).
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print(f"listening on http://{args.host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An open-loop load: requests start at a set rate whatever the server does, as a service's clients arrive.

wrk is closed-loop: a connection asks again only once answered, so a server that slows down is asked less and
its latency looks better than its clients would see. Here request i is due at start + i / rate; it goes out on
an idle keep-alive connection, or a new one (at most MAX_CONNECTIONS open; past that it waits for one, and its
latency still counts from when it was due). Its latency is from when it was due to the last byte of the answer.

Writes the same file as cycle.lua's loop mode (`status latency_us` per request, `#` lines of totals), so
load.parse reads it: status -1 for a request unanswered at the end, 0 for a broken connection.

    openloop.py --base http://127.0.0.1:8080 --urls FILE --rate 400 --seconds 10 --timeout 10 --out FILE
"""
import argparse
import asyncio
import itertools
import time
from urllib.parse import urlsplit

MAX_CONNECTIONS = 512


class Connection:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def get(self, host, path):
        """The answer's status, and whether the connection may be used again."""
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        keeps = fields.get("connection", "").lower() != "close" and not lines[0].startswith("HTTP/1.0")
        if "content-length" in fields:
            await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        else:
            await self.reader.read()
            keeps = False
        return status, keeps

    def close(self):
        self.writer.close()


async def run(base, paths, rate, seconds, timeout, out):
    target = urlsplit(base)
    host, port = target.hostname, target.port or 80
    idle, open_count = [], 0
    slots = asyncio.Semaphore(MAX_CONNECTIONS)
    records = []  # [status, latency_us]
    started = time.monotonic()
    count = int(rate * seconds)

    async def one(index, path):
        nonlocal open_count
        due = started + index / rate
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        record = [-1, 0.0]
        records.append(record)
        async with slots:
            connection = idle.pop() if idle else None
            try:
                if connection is None:
                    reader, writer = await asyncio.open_connection(host, port)
                    connection = Connection(reader, writer)
                    open_count += 1
                status, keeps = await asyncio.wait_for(connection.get(f"{host}:{port}", path), timeout + 5)
                record[:] = [status, (time.monotonic() - due) * 1e6]
                if keeps:
                    idle.append(connection)
                else:
                    connection.close()
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError,
                    asyncio.TimeoutError):
                record[:] = [0, (time.monotonic() - due) * 1e6]
                if connection is not None:
                    connection.close()

    tasks = [asyncio.ensure_future(one(i, p)) for i, p in zip(range(count), itertools.cycle(paths))]
    # Past the last due time, requests in flight get up to `timeout` to finish; the rest count as unanswered.
    done, pending = await asyncio.wait(tasks, timeout=seconds + timeout)
    for task in pending:
        task.cancel()
    finished = time.monotonic()
    for record in records:
        if record[0] == -1:
            record[1] = (finished - started) * 1e6  # unanswered: as old as the whole load, beyond any timeout
    for connection in idle:
        connection.close()
    with open(out, "w") as f:
        f.write(f"#wrk_duration_us {seconds * 1e6:.0f}\n")
        f.write("#wrk_errors 0 0 0 0 0\n")
        f.write(f"#rate_per_s {rate}\n")
        f.write(f"#connections_opened {open_count}\n")
        for status, latency in records:
            f.write(f"{status} {latency:.0f}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True)
    parser.add_argument("--urls", required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--timeout", type=float, default=10)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open(args.urls) as f:
        paths = [line.strip() for line in f if line.strip()]
    asyncio.run(run(args.base, paths, args.rate, args.seconds, args.timeout, args.out))


if __name__ == "__main__":
    main()

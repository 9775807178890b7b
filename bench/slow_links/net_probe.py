#!/usr/bin/env python3
"""A minimal iperf-like probe of one emulated link (bench/slow_links/slow_link_bench.sh).

  net_probe.py server HOST PORT            serve one bulk connection, then one echo connection
  net_probe.py client HOST PORT BYTES      send BYTES, then 200 one-byte round trips;
                                           prints one JSON object

The server answers the bulk transfer with the bytes it received and the seconds from the
first byte to the end of the stream, so the rate is what crossed the link, not what the
client's socket buffer swallowed. Only the standard library: the bench runs it inside
the network namespaces it creates, on the addresses it gave them.
"""
import json
import socket
import statistics
import sys
import time

CHUNK = 1 << 20
ROUND_TRIPS = 200


def serve(host, port):
    with socket.create_server((host, port)) as listener:
        listener.settimeout(60)
        # 1: bulk. Count bytes until the client closes its side, answer with the figures.
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(60)
            received, first = 0, None
            while True:
                data = conn.recv(CHUNK)
                if not data:
                    break
                if first is None:
                    first = time.perf_counter()
                received += len(data)
            seconds = time.perf_counter() - first if first is not None else 0.0
            conn.sendall((json.dumps({"bytes": received, "seconds": seconds}) + "\n").encode())
        # 2: echo, one byte at a time.
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(60)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                data = conn.recv(1)
                if not data:
                    break
                conn.sendall(data)


def connect(host, port):
    deadline = time.monotonic() + 20
    while True:
        try:
            return socket.create_connection((host, port), timeout=60)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def client(host, port, total):
    payload = b"\x5a" * CHUNK
    with connect(host, port) as conn:
        sent = 0
        while sent < total:
            n = min(CHUNK, total - sent)
            conn.sendall(payload[:n])
            sent += n
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while not answer.endswith(b"\n"):
            data = conn.recv(4096)
            if not data:
                break
            answer += data
    figures = json.loads(answer.decode())
    rtts = []
    with connect(host, port) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(ROUND_TRIPS):
            start = time.perf_counter()
            conn.sendall(b"x")
            if conn.recv(1) != b"x":
                raise RuntimeError("echo answered something else")
            rtts.append(time.perf_counter() - start)
    seconds = figures["seconds"]
    print(json.dumps({
        "bytes": figures["bytes"],
        "seconds": round(seconds, 6),
        "bytes_per_s": figures["bytes"] / seconds if seconds > 0 else None,
        "rtt_ms_median": round(statistics.median(rtts) * 1e3, 4),
    }))


def main(argv):
    if len(argv) == 4 and argv[1] == "server":
        serve(argv[2], int(argv[3]))
    elif len(argv) == 5 and argv[1] == "client":
        client(argv[2], int(argv[3]), int(argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Kernel-side TCP peer for wirelab's live tests: plain sockets, so the machine's own TCP
(the namespace's sysctls: congestion control, buffers) is what talks to wirelab.

  kpeer.py recv PORT                  accept one connection, read to EOF, close
  kpeer.py send HOST PORT BYTES SEED  connect, write BYTES pseudo-random bytes, half-close,
                                      read to EOF (the peer's close: all data arrived)
  kpeer.py send-for HOST PORT SECONDS  connect, write as fast as the connection takes for
                                      SECONDS, then half-close and read to EOF

Prints one JSON line: {"mode", "bytes", "sha256", "seconds", "cc"}.
"""
import hashlib
import json
import random
import socket
import sys
import time


def cc_of(s):
    try:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
    except OSError:
        return ""


def recv(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    ls.settimeout(120)
    c, _ = ls.accept()
    t0 = time.monotonic()
    h, n = hashlib.sha256(), 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b)
        n += len(b)
    out = {"mode": "recv", "bytes": n, "sha256": h.hexdigest(), "seconds": time.monotonic() - t0, "cc": cc_of(c)}
    c.close()
    return out


def send(host, port, nbytes, seed):
    rng = random.Random(seed)
    s = socket.create_connection((host, port), timeout=120)
    t0 = time.monotonic()
    h, left = hashlib.sha256(), nbytes
    while left > 0:
        k = min(left, 1 << 16)
        b = rng.getrandbits(8 * k).to_bytes(k, "little")
        s.sendall(b)
        h.update(b)
        left -= k
    s.shutdown(socket.SHUT_WR)
    while s.recv(1 << 16):
        pass
    out = {"mode": "send", "bytes": nbytes, "sha256": h.hexdigest(), "seconds": time.monotonic() - t0, "cc": cc_of(s)}
    s.close()
    return out


def send_for(host, port, seconds):
    s = socket.create_connection((host, port), timeout=120)
    t0 = time.monotonic()
    b = bytes(1 << 16)
    n = 0
    while time.monotonic() - t0 < seconds:
        n += s.send(b)
    s.shutdown(socket.SHUT_WR)
    while s.recv(1 << 16):
        pass
    out = {"mode": "send-for", "bytes": n, "sha256": "", "seconds": time.monotonic() - t0, "cc": cc_of(s)}
    s.close()
    return out


def main():
    a = sys.argv[1:]
    if a[0] == "recv":
        r = recv(int(a[1]))
    elif a[0] == "send-for":
        r = send_for(a[1], int(a[2]), float(a[3]))
    else:
        r = send(a[1], int(a[2]), int(a[3]), int(a[4]))
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()

"""A TCP relay: `python cluster_relay.py LISTEN_PORT TARGET_PORT` (loopback). One stands between
each node of tests/cluster_harness.py and etcd; SIGSTOP of it partitions that node from etcd."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def main(listen: int, target: int) -> None:
    server = socket.create_server(("127.0.0.1", listen), backlog=256)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", target))
        except OSError:
            client.close()
            continue
        for sock in (client, upstream):  # forward at once, as a link would: without it a
            # request arriving in two segments waits for etcd's delayed ACK (40 ms)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))

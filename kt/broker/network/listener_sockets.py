"""A listener's server sockets (Kafka's Acceptor.openServerSocket): one per address its
host resolves to, bound and listening, non-blocking, for the SocketServer to accept on."""

from __future__ import annotations

import socket

BACKLOG = 50  # socket.listen.backlog.size's default


def bind_listeners(host: str, port: int, backlog: int = BACKLOG) -> list[socket.socket]:
    """Non-blocking listening sockets on every address `host` resolves to."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    listeners: list[socket.socket] = []
    try:
        for family, type_, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, type_, proto)
            listeners.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in listeners:
            sock.close()
        raise
    return listeners

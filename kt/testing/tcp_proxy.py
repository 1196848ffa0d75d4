"""A TCP proxy on 127.0.0.1 that can drop its traffic, for network-fault tests.

    proxy = TcpProxy("127.0.0.1", zookeeper_port)   # clients connect to proxy.port
    proxy.drop()      # from now on nothing gets through, in either direction, and new
                      # connections are accepted but go nowhere: a blocked port, as a
                      # firewall rule that drops packets makes it (no reset, no refusal)
    proxy.restore()   # traffic flows again; the connections of the fault are closed
                      # (their streams lost bytes), so clients reconnect
    proxy.close()

No root and no iptables: the brokers under test are pointed at the proxy instead of the
server. One thread accepts, two threads pump each connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading

BUFFER = 65536


class TcpProxy:
    """Forwards each connection to `upstream`; see the module docstring."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._dropping = False
        self._connections: list[tuple[socket.socket, socket.socket | None]] = []
        self._broken: list[socket.socket] = []  # open during a fault: closed on restore
        self._closed = False
        threading.Thread(target=self._accept, name=f"tcp-proxy-{self.port}", daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def drop(self) -> None:
        with self._lock:
            self._dropping = True
            self._broken += [s for pair in self._connections for s in pair if s is not None]

    def restore(self) -> None:
        with self._lock:
            self._dropping = False
            broken, self._broken = self._broken, []
        for sock in broken:
            _close(sock)

    def close(self) -> None:
        self._closed = True
        _close(self._listener)
        with self._lock:
            connections, self._connections = self._connections, []
        for pair in connections:
            for sock in pair:
                if sock is not None:
                    _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                dropping = self._dropping
            if dropping:  # a blackhole: the client waits for an answer that never comes
                with self._lock:
                    self._connections.append((client, None))
                    self._broken.append(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._connections.append((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(BUFFER)
                if not data:
                    break
                with self._lock:
                    dropping = self._dropping
                if not dropping:
                    sink.sendall(data)
        except OSError:
            pass  # the other side closed, or restore() closed a connection of the fault
        finally:
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()

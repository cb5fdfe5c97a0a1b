"""A TCP forwarder that can go away: the MLflow tests put it between the importer and a real
MLflow server to make the server disappear mid-pull (after `limit` HTTP requests) and come back."""

from __future__ import annotations

import socket
import threading
from typing import Any


class FlakyProxy:
    def __init__(self, upstream: tuple[str, int], limit: int | None = None) -> None:
        self.upstream = upstream
        self.limit = limit
        self.requests = 0
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def down(self) -> bool:
        return self.limit is not None and self.requests >= self.limit

    def come_back(self) -> None:
        with self.lock:
            self.limit = None

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()  # the server is away: connections are cut at once
                continue
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, counting: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if counting:
                    with self.lock:
                        self.requests += data.count(b" HTTP/1.1\r\n")
                    if self.down:
                        break  # this request never reaches the server
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self, *exc: Any) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(): close() alone leaves it listening
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for s in self.sockets:
                try:
                    s.close()
                except OSError:
                    pass

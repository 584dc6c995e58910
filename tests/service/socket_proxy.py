"""A Docker engine one worker can lose: a Unix-socket relay to the real engine that the test
cuts, so that engine is unreachable for that worker alone."""

from __future__ import annotations

import socket
import tempfile
import threading
from pathlib import Path


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy one direction of a relayed connection; each pump closes the end it reads."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        source.close()


class EngineRelay:
    def __init__(self, target: str = "/var/run/docker.sock") -> None:
        self.target = target
        self.folder = Path(tempfile.mkdtemp(prefix="engine-relay-"))
        self.path = self.folder / "docker.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self._listener.listen(64)
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def docker_host(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while not self._cut.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine.connect(self.target)
            with self._lock:
                self._open += [client, engine]
            threading.Thread(target=pump, args=(client, engine), daemon=True).start()
            threading.Thread(target=pump, args=(engine, client), daemon=True).start()

    def cut(self) -> None:
        """From now on the engine does not answer on this path: connections drop, new ones fail."""
        self._cut.set()
        self._listener.close()
        self.path.unlink(missing_ok=True)
        with self._lock:
            for end in self._open:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                end.close()

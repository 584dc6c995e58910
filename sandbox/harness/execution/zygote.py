"""The fork server: every process that runs student code is forked from here.

The harness starts it before it reads the plan, so this process holds no plan, nonce, hidden
input or order of runs, and it never reads a task either: for each run the supervisor passes
it three file descriptors (the task, the record channel, the output); it forks a child that
reads its task from the first one, and reports back the child's pid and, once the child has
ended, its wait status. Interpreter start-up and common imports are paid once, here, and so is
compiling the submission: once a child has loaded it, the supervisor has the fork server compile
it (never run it), and every later child executes that code object.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import socket
import struct
from collections.abc import Callable
from typing import NoReturn

_MESSAGE = struct.Struct("!Bq")
SPAWNED, EXITED, NO_FORK, COMPILED = 1, 2, 3, 4
MAX_SOURCE = 8 * 1024 * 1024  # what a precompile request may carry
PRELOADABLE = frozenset({"numpy"})  # what the fork server imports on request (never a student's module)

ChildMain = Callable[[int, int, int], NoReturn]
Precompile = Callable[[str, str], bool]  # (source, filename): compiled and kept for the children


class ZygoteGone(Exception):
    """The fork server stopped answering: an infrastructure failure, never the student's."""


class Zygote:
    """The supervisor's handle on the fork server."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    @classmethod
    def start(
        cls, child_main: ChildMain, preload: Callable[[], None] | None = None, precompile: Precompile | None = None
    ) -> Zygote:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the fork server
            status = 0
            try:
                ours.close()
                if preload is not None:
                    preload()
                _serve(theirs, child_main, precompile)
            except BaseException:
                status = 70
            os._exit(status)
        theirs.close()
        return cls(pid, ours)

    def preload(self, module: str) -> bool:
        """Have the fork server import one of ``PRELOADABLE`` now, for every later child."""
        return self._request({"import": module})

    def precompile(self, source: str, filename: str) -> bool:
        """Have the fork server compile (never run) the submission once, so that every later
        child starts from the code object instead of compiling it again. Call only once a child
        has loaded the same text: a text the compiler chokes on never reaches the fork server."""
        return self._request({"source": source, "filename": filename})

    def _request(self, request: dict[str, str]) -> bool:
        body = json.dumps(request).encode()
        if len(body) > MAX_SOURCE:
            return False
        read_end, write_end = os.pipe()
        try:
            socket.send_fds(self.sock, [b"C"], [read_end])
            os.close(read_end)
            read_end = -1
            with os.fdopen(write_end, "wb") as pipe:
                write_end = -1
                pipe.write(body)
            kind, value = self._receive(timeout=30.0)
        except OSError as error:
            raise ZygoteGone(str(error)) from error
        finally:
            for fd in (read_end, write_end):
                if fd >= 0:
                    os.close(fd)
        if kind != COMPILED:
            raise ZygoteGone(f"unexpected answer {kind}")
        return bool(value)

    def spawn(self, task: int, records: int, output: int) -> int:
        """Fork one child with these descriptors; its pid, or -errno when no process could be made."""
        try:
            socket.send_fds(self.sock, [b"S"], [task, records, output])
            kind, value = self._receive(timeout=30.0)
        except OSError as error:
            raise ZygoteGone(str(error)) from error
        if kind == NO_FORK:
            return -value
        if kind != SPAWNED:
            raise ZygoteGone(f"unexpected answer {kind}")
        return value

    def exit_status(self) -> int:
        """The wait status of the running child; call once the socket is readable."""
        kind, value = self._receive(timeout=30.0)
        if kind != EXITED:
            raise ZygoteGone(f"unexpected answer {kind}")
        return value

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass

    def _receive(self, timeout: float) -> tuple[int, int]:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            raise ZygoteGone("no answer from the fork server")
        data = b""
        while len(data) < _MESSAGE.size:
            chunk = self.sock.recv(_MESSAGE.size - len(data))
            if not chunk:
                raise ZygoteGone("the fork server closed its channel")
            data += chunk
        kind, value = _MESSAGE.unpack(data)
        return kind, value


def _read_request(fd: int) -> dict[str, str] | None:
    chunks, size = [], 0
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            size += len(chunk)
            if size > MAX_SOURCE:
                return None
            chunks.append(chunk)
    request = json.loads(b"".join(chunks))
    if not isinstance(request, dict) or not all(isinstance(v, str) for v in request.values()):
        return None
    return request


def _precompile(sock: socket.socket, fds: list[int], precompile: Precompile | None) -> None:
    """A request of the supervisor's: compile the submission, or import a module for the children."""
    done = False
    try:
        request = _read_request(fds[0]) if len(fds) == 1 else None
        if request is not None and request.get("import") in PRELOADABLE:
            importlib.import_module(request["import"])
            done = True
        elif request is not None and precompile is not None and {"source", "filename"} <= request.keys():
            done = precompile(request["source"], request["filename"])
    except Exception:
        done = False  # no code object kept: the children compile as before
    finally:
        for fd in fds[1:]:
            os.close(fd)
    sock.sendall(_MESSAGE.pack(COMPILED, int(done)))


def _serve(sock: socket.socket, child_main: ChildMain, precompile: Precompile | None = None) -> None:
    """One child at a time: fork it, report its pid, wait for it, report how it ended."""
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1, 3)
        except OSError:
            return
        if not message:
            return  # the supervisor is done
        if message == b"C":
            _precompile(sock, fds, precompile)
            continue
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.sendall(_MESSAGE.pack(NO_FORK, 22))
            continue
        try:
            pid = os.fork()
        except OSError as error:
            for fd in fds:
                os.close(fd)
            sock.sendall(_MESSAGE.pack(NO_FORK, error.errno or 11))
            continue
        if pid == 0:
            sock.close()
            child_main(*fds)
        for fd in fds:
            os.close(fd)
        sock.sendall(_MESSAGE.pack(SPAWNED, pid))
        _, status = os.waitpid(pid, 0)
        sock.sendall(_MESSAGE.pack(EXITED, status))

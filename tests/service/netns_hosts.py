"""Grading hosts on one machine: each worker in its own network namespace and UTS namespace
(its own host name), joined to the database's namespace (this one) by a veth pair, and
reaching PostgreSQL only through that pair. Docker is shared through its Unix socket.

Where namespaces cannot be made (no CAP_NET_ADMIN), ``HostNetwork.make`` says why and the
hosts fall back to plain processes on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass

from socket_proxy import pump


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


class TcpRelay:
    """Accepts on the database side of a veth pair and relays to PostgreSQL on loopback."""

    def __init__(self, listen: str, target_port: int) -> None:
        self._listener = socket.create_server((listen, 0))
        self.port = self._listener.getsockname()[1]
        self.target_port = target_port
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=pump, args=(source, sink), daemon=True).start()

    def close(self) -> None:
        self._listener.close()


@dataclass
class Host:
    name: str
    namespace: str  # "" when namespaces could not be made
    database_host: str  # the address this host reaches the database at
    database_port: int

    def command(self, argv: list[str]) -> list[str]:
        if not self.namespace:
            return argv
        # Its own host name, so the fleet's records tell the hosts apart.
        script = f'hostname {self.name} && exec "$@"'
        return ["ip", "netns", "exec", self.namespace, "unshare", "--uts", "sh", "-c", script, "sh", *argv]


class HostNetwork:
    def __init__(self, database_port: int) -> None:
        self.database_port = database_port
        self.hosts: list[Host] = []
        self.relays: list[TcpRelay] = []
        self.fallback = ""  # why the hosts are plain processes, when they are
        self._tag = f"ag{os.getpid() % 10000}"

    def make(self, count: int) -> list[Host]:
        if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
            self.fallback = "namespaces need root, ip and unshare"
        for index in range(count):
            name = f"grader-{chr(ord('a') + index)}"
            if not self.fallback:
                try:
                    self.hosts.append(self._namespaced(index, name))
                    continue
                except (subprocess.CalledProcessError, OSError) as error:
                    stderr = getattr(error, "stderr", "") or ""
                    self.fallback = f"cannot make a network namespace ({error} {stderr.strip()})"
                    self.close()
            self.hosts.append(Host(name, "", "127.0.0.1", self.database_port))
        return self.hosts

    def _namespaced(self, index: int, name: str) -> Host:
        namespace, outside, inside = f"{self._tag}-{index}", f"{self._tag}v{index}a", f"{self._tag}v{index}b"
        database_ip, host_ip = f"10.231.{index}.1", f"10.231.{index}.2"
        _ip("netns", "add", namespace)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", namespace)
        _ip("addr", "add", f"{database_ip}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("netns", "exec", namespace, "ip", "addr", "add", f"{host_ip}/30", "dev", inside)
        _ip("netns", "exec", namespace, "ip", "link", "set", inside, "up")
        _ip("netns", "exec", namespace, "ip", "link", "set", "lo", "up")
        relay = TcpRelay(database_ip, self.database_port)
        self.relays.append(relay)
        return Host(name, namespace, database_ip, relay.port)

    def close(self) -> None:
        for relay in self.relays:
            relay.close()
        for host in self.hosts:
            if host.namespace:
                subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True, check=False)
                subprocess.run(
                    ["ip", "link", "del", f"{host.namespace.replace('-', 'v')}a"], capture_output=True, check=False
                )
        self.relays.clear()

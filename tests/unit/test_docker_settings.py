"""The Docker runner's contract with the engine, checked against a fake client (no daemon).

These pin the trust-boundary settings (design.md): any change to what a container is
created with must show up here as a deliberate test change.
"""

from __future__ import annotations

import io
import socket
import struct
import tarfile
import threading
from typing import Any

import docker.errors
import pytest
import requests.exceptions
from docker.types import LogConfig, Mount, Ulimit

from grader.errors import InfraError
from grader.runners.base import ContainerLimits
from grader.runners.docker import DockerRunner, owner_id, reap_leftovers

LIMITS = ContainerLimits(wall_seconds=20.0, memory_mb=512, cpus=1.5, pids=64, stdout_bytes=1000, tmpfs_mb=16)
IMAGE_ID = "sha256:" + "ab" * 32


class FakeStream:
    """The attach socket: a real socketpair carrying Docker's multiplexed frames.

    A socketpair, because docker's frame reader polls a real file descriptor.
    """

    def __init__(self, container: FakeContainer) -> None:
        self.container = container
        self.sock, writer = socket.socketpair()
        for out, err in container.chunks:
            kind, data = (1, out) if out is not None else (2, err or b"")
            writer.sendall(struct.pack(">BxxxL", kind, len(data)) + data)
        if container.hang:
            # A submission that never ends: the stream stays open until the container dies.
            threading.Thread(target=lambda: (container.killed.wait(timeout=10), writer.close()), daemon=True).start()
        else:
            writer.close()

    @property
    def closed(self) -> bool:
        return self.sock.fileno() == -1


class FakeApi:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def attach_socket(self, container_id: str, params: dict[str, Any]) -> socket.socket:
        container = self.client.created
        if container is None or container.id != container_id:
            raise AssertionError("attach to a container that was never created")
        container.log.append(("attach", params))
        stream = FakeStream(container)
        container.streams.append(stream)
        return stream.sock


class FakeContainer:
    def __init__(self, log: list[Any], kwargs: dict[str, Any]) -> None:
        self.id = "c0ffee"
        self.log = log
        self.kwargs = kwargs
        self.chunks: list[tuple[bytes | None, bytes | None]] = [(b"hello ", None), (None, b"warn"), (b"world", None)]
        self.hang = False
        self.start_error: Exception | None = None
        self.remove_error: Exception | None = None
        self.killed = threading.Event()
        self.archive = b""
        self.attrs: dict[str, Any] = {"State": {"ExitCode": 0, "OOMKilled": False}}
        self.streams: list[FakeStream] = []

    def put_archive(self, path: str, data: bytes) -> bool:
        self.log.append(("put_archive", path))
        self.archive = data
        return True

    def start(self) -> None:
        self.log.append(("start",))
        if self.start_error is not None:
            raise self.start_error

    def wait(self, *, timeout: float) -> dict[str, int]:
        self.log.append(("wait", timeout))
        if self.hang and not self.killed.is_set():
            raise requests.exceptions.ReadTimeout("still running")
        return {"StatusCode": self.attrs["State"]["ExitCode"]}

    def kill(self) -> None:
        self.log.append(("kill",))
        self.killed.set()
        self.attrs["State"]["ExitCode"] = 137

    def reload(self) -> None:
        self.log.append(("reload",))

    def remove(self, **kwargs: Any) -> None:
        self.log.append(("remove_container", kwargs))
        if self.remove_error is not None:
            raise self.remove_error


class FakeVolume:
    def __init__(self, log: list[Any], name: str) -> None:
        self.log = log
        self.name = name

    def remove(self, **kwargs: Any) -> None:
        self.log.append(("remove_volume", self.name, kwargs))


class FakeContainers:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def create(self, image: str, **kwargs: Any) -> FakeContainer:
        self.client.log.append(("create", image))
        if self.client.create_error is not None:
            raise self.client.create_error
        self.client.created = FakeContainer(self.client.log, kwargs)
        self.client.create_image = image
        self.client.setup(self.client.created)
        return self.client.created

    def list(self, **kwargs: Any) -> list[FakeContainer]:
        self.client.log.append(("list_containers", kwargs))
        return self.client.leftover_containers


class FakeVolumes:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def create(self, **kwargs: Any) -> FakeVolume:
        self.client.log.append(("create_volume", kwargs))
        self.client.volume_kwargs = kwargs
        return FakeVolume(self.client.log, kwargs["name"])

    def list(self, **kwargs: Any) -> list[FakeVolume]:
        self.client.log.append(("list_volumes", kwargs))
        return self.client.leftover_volumes


class FakeImage:
    id = IMAGE_ID


class FakeImages:
    def get(self, name: str) -> FakeImage:
        return FakeImage()


class FakeClient:
    def __init__(self, cgroup_version: str = "1") -> None:
        self.log: list[Any] = []
        self.cgroup_version = cgroup_version
        self.containers = FakeContainers(self)
        self.volumes = FakeVolumes(self)
        self.images = FakeImages()
        self.api = FakeApi(self)
        self.created: FakeContainer | None = None
        self.create_image = ""
        self.create_error: Exception | None = None
        self.volume_kwargs: dict[str, Any] = {}
        self.leftover_containers: list[FakeContainer] = []
        self.leftover_volumes: list[FakeVolume] = []
        self.setup: Any = lambda container: None  # lets a test shape the next container

    def info(self) -> dict[str, Any]:
        return {"CgroupVersion": self.cgroup_version}


def make_runner(client: FakeClient) -> DockerRunner:
    return DockerRunner(image="autograd-grader:0123456789ab", client=client)  # type: ignore[arg-type]


def run(client: FakeClient, limits: ContainerLimits = LIMITS) -> Any:
    return make_runner(client).run(
        source=b"class Value: pass\n", filename="autograd_lab.py", plan=b'{"probes": []}', limits=limits
    )


def names(log: list[Any]) -> list[str]:
    return [entry[0] for entry in log]


def test_container_is_created_with_exactly_the_trust_boundary_settings() -> None:
    client = FakeClient()
    run(client)
    assert client.created is not None
    kwargs = dict(client.created.kwargs)
    run_id = kwargs["labels"]["autograd-grader.run"]
    volume = client.volume_kwargs["name"]
    assert client.create_image == IMAGE_ID  # by id: the image reported is the image run
    assert kwargs == {
        "command": ["python3", "-s", "-P", "-B", "/opt/ag/sandbox/run_harness.py", "--workdir", "/sandbox"],
        "name": f"autograd-grader-{run_id}",
        # The owner label (host:pid) lets a later run remove what a killed grader left behind.
        "labels": {"autograd-grader": "1", "autograd-grader.run": run_id, "autograd-grader.owner": owner_id()},
        "user": "0:0",
        "cap_drop": ["ALL"],
        "cap_add": ["SETUID", "SETGID", "KILL"],
        "security_opt": ["no-new-privileges:true"],
        "network_disabled": True,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": "rw,noexec,nosuid,nodev,size=16m,nr_inodes=1024,mode=1777"},
        "mounts": [Mount(target="/sandbox", source=volume, type="volume", read_only=False)],
        "working_dir": "/sandbox",
        "mem_limit": "512m",
        "memswap_limit": "512m",
        "mem_swappiness": 0,
        "nano_cpus": 1_500_000_000,
        "pids_limit": 64,
        "ulimits": [
            Ulimit(name="core", soft=0, hard=0),
            Ulimit(name="fsize", soft=8 << 20, hard=8 << 20),
            Ulimit(name="nofile", soft=256, hard=256),
        ],
        "init": True,
        "ipc_mode": "none",
        "sysctls": {"kernel.msgmni": "0", "kernel.sem": "0 0 0 0", "kernel.shmmni": "0", "kernel.shm_rmid_forced": "1"},
        "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        "environment": {
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONMALLOC": "malloc",
            "MALLOC_ARENA_MAX": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        },
        "stop_signal": "SIGKILL",
        "tty": False,
        "stdin_open": False,
    }
    assert client.volume_kwargs == {
        "name": volume,
        "driver": "local",
        # The owner label (host:pid) lets a later run remove what a killed grader left behind.
        "labels": {"autograd-grader": "1", "autograd-grader.run": run_id, "autograd-grader.owner": owner_id()},
    }


def test_swappiness_is_left_out_on_cgroup_v2() -> None:
    client = FakeClient(cgroup_version="2")
    run(client)
    assert client.created is not None
    assert "mem_swappiness" not in client.created.kwargs
    assert client.created.kwargs["memswap_limit"] == client.created.kwargs["mem_limit"] == "512m"


def test_inputs_go_into_the_volume_before_start_with_root_owned_modes() -> None:
    client = FakeClient()
    run(client)
    container = client.created
    assert container is not None
    order = names(client.log)
    assert order.index("put_archive") < order.index("start")
    assert order.index("attach") < order.index("start")  # no output is missed
    assert ("put_archive", "/sandbox") in client.log
    with tarfile.open(fileobj=io.BytesIO(container.archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == ["plan.json", "submission", "submission/autograd_lab.py"]
        plan, folder, source = members["plan.json"], members["submission"], members["submission/autograd_lab.py"]
        assert plan.isfile() and plan.mode == 0o400  # the student uid cannot read the plan
        assert folder.isdir() and folder.mode == 0o500
        assert source.isfile() and source.mode == 0o400
        for member in members.values():
            assert (member.uid, member.gid) == (0, 0)
        assert tar.extractfile(plan).read() == b'{"probes": []}'  # type: ignore[union-attr]
        assert tar.extractfile(source).read() == b"class Value: pass\n"  # type: ignore[union-attr]


def test_a_normal_run_reports_output_and_cleans_up() -> None:
    client = FakeClient()
    result = run(client)
    assert result.stdout == b"hello world"
    assert result.stderr_tail == b"warn"
    assert (result.exit_code, result.timed_out, result.stdout_truncated, result.oom_killed) == (0, False, False, False)
    assert (result.runner, result.image) == ("docker", IMAGE_ID)
    assert ("remove_container", {"force": True, "v": True}) in client.log
    assert any(e[0] == "remove_volume" and e[2] == {"force": True} for e in client.log)
    assert "kill" not in names(client.log)
    assert client.created is not None and all(s.closed for s in client.created.streams)


def test_container_and_volume_are_removed_when_start_raises() -> None:
    client = FakeClient()
    client.setup = lambda c: setattr(c, "start_error", docker.errors.APIError("cannot start"))
    with pytest.raises(InfraError):
        run(client)
    order = names(client.log)
    assert "remove_container" in order and "remove_volume" in order
    assert order.index("remove_container") < order.index("remove_volume")
    assert ("remove_container", {"force": True, "v": True}) in client.log


def test_an_api_error_on_create_is_an_infra_error_and_the_volume_goes() -> None:
    client = FakeClient()
    client.create_error = docker.errors.APIError("engine says no")
    with pytest.raises(InfraError, match="engine says no"):
        run(client)
    assert "remove_volume" in names(client.log)


def test_stdout_past_the_cap_kills_and_truncates() -> None:
    client = FakeClient()
    client.setup = lambda c: setattr(c, "chunks", [(b"x" * 600, None), (b"y" * 600, None), (b"z", None)])
    result = run(client)
    assert result.stdout_truncated
    assert result.stdout == b"x" * 600 + b"y" * 400
    assert "kill" in names(client.log)
    assert result.exit_code is None and not result.timed_out


def test_the_wall_deadline_kills_a_run_that_never_ends() -> None:
    client = FakeClient()
    client.setup = lambda c: setattr(c, "hang", True)
    limits = ContainerLimits(wall_seconds=0.3, memory_mb=512, cpus=1.0, pids=64, stdout_bytes=1000, tmpfs_mb=16)
    result = run(client, limits)
    assert result.timed_out and result.exit_code is None
    assert "kill" in names(client.log)
    assert 0.25 <= result.elapsed < 5
    assert "remove_container" in names(client.log)


def test_oom_kill_is_read_from_the_container_state() -> None:
    client = FakeClient()
    client.setup = lambda c: c.attrs.update({"State": {"ExitCode": 137, "OOMKilled": True}})
    result = run(client)
    assert result.oom_killed and result.exit_code == 137 and not result.timed_out


def test_a_failed_cleanup_after_a_good_run_is_an_infra_error() -> None:
    client = FakeClient()
    client.setup = lambda c: setattr(c, "remove_error", docker.errors.APIError("device busy"))
    with pytest.raises(InfraError, match="could not clean up"):
        run(client)
    assert "remove_volume" in names(client.log)  # the volume is still tried


def test_a_bad_filename_never_reaches_the_engine() -> None:
    client = FakeClient()
    with pytest.raises(ValueError):
        make_runner(client).run(source=b"", filename="../etc/passwd", plan=b"{}", limits=LIMITS)
    assert "create" not in names(client.log) and "create_volume" not in names(client.log)


def test_reap_leftovers_removes_labelled_containers_and_volumes() -> None:
    client = FakeClient()
    client.leftover_containers = [FakeContainer(client.log, {})]
    client.leftover_volumes = [FakeVolume(client.log, "autograd-grader-old")]
    assert reap_leftovers(client) == 2  # type: ignore[arg-type]
    assert ("list_containers", {"all": True, "filters": {"label": ["autograd-grader"]}}) in client.log
    assert ("list_volumes", {"filters": {"label": ["autograd-grader"]}}) in client.log
    assert ("remove_container", {"force": True, "v": True}) in client.log
    assert ("remove_volume", "autograd-grader-old", {"force": True}) in client.log

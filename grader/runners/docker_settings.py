"""The hardened container's settings: what goes in, and with which limits it is created.

``create_container`` is the one place that creates sandbox containers, so every run gets the
same trust-boundary defaults (no capabilities beyond setuid/kill, no network, read-only root,
capped memory, cpus, pids and file sizes). ``submission_archive`` builds the tar written into
the run's fresh volume before start. ``grader.runners.docker`` drives a container made here.
"""

from __future__ import annotations

import io
import re
import tarfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

import docker
from docker.models.containers import Container
from docker.types import LogConfig, Mount, Ulimit

from grader.image import HARNESS_FLAGS, LABEL, SANDBOX_ENV
from grader.runners.base import PLAN_NAME, SUBMISSION_DIR, ContainerLimits

WORKDIR = "/sandbox"
HARNESS_COMMAND: tuple[str, ...] = (
    "python3",
    *HARNESS_FLAGS,
    "/opt/ag/sandbox/run_harness.py",
    "--workdir",
    WORKDIR,
)
FSIZE_BYTES = 8 * 1024 * 1024
NOFILE = 256
# Files and folders /tmp may hold at once, the harness's own included: what one run can leave for
# the cleanup after it (charged to the grading) is bounded. A file that left 40,000 empty folders
# on every run once took 30 to 50 times its honest twin's real time to grade.
TMPFS_INODES = 1024
_FILENAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def accepts_swappiness(info: dict[str, Any]) -> bool:
    """Whether this engine applies ``mem_swappiness``.

    cgroup v2 has no per-group swappiness: the engine drops the setting with a warning (or,
    in some engine/runc pairs, refuses the container). memory == memory+swap already forbids
    swap there, so we leave it out rather than pretend it is in force.
    """
    return str(info.get("CgroupVersion", "1")) != "2"


def submission_archive(*, plan: bytes, source: bytes, filename: str) -> bytes:
    """The in-memory tar extracted into the fresh volume at /sandbox before start.

    Everything is owned by root and readable by root only: the harness reads plan.json and the
    submission and hands student code (``wire.STUDENT_UID``) only its own task, so a submission
    cannot learn the nonce or the probe list, nor compare a mutated copy with the original file.
    """
    if not _FILENAME.fullmatch(filename) or filename in (".", ".."):
        raise ValueError(f"not a plain file name: {filename!r}")
    now = int(time.time())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, mode, data in (
            (PLAN_NAME, tarfile.REGTYPE, 0o400, plan),
            (SUBMISSION_DIR, tarfile.DIRTYPE, 0o500, b""),
            (f"{SUBMISSION_DIR}/{filename}", tarfile.REGTYPE, 0o400, source),
        ):
            info = tarfile.TarInfo(name)
            info.type = kind
            info.mode = mode
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = now
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def run_labels(extra: Mapping[str, str], run_id: str) -> dict[str, str]:
    return {**extra, LABEL: "1", f"{LABEL}.run": run_id}


def create_container(
    client: docker.DockerClient,
    *,
    image: str,
    volume: str,
    limits: ContainerLimits,
    run_id: str,
    command: Sequence[str] = HARNESS_COMMAND,
    swappiness: bool = True,
    labels: Mapping[str, str] | None = None,
    stdin: bool = False,
) -> Container:
    """Create (not start) the container for one run, with every trust-boundary default on.
    ``stdin``: a warm container, whose harness reads its inputs from an attached standard input
    (closed when that one client goes)."""
    memory = f"{limits.memory_mb}m"
    extra: dict[str, Any] = {"mem_swappiness": 0} if swappiness else {}
    return client.containers.create(
        image,
        command=list(command),
        name=f"{LABEL}-{run_id}",
        labels=run_labels(labels or {}, run_id),
        # Root inside the container, only so the harness can setuid each student process to
        # 10002 (SETUID/SETGID) and signal/kill those processes across that uid (KILL).
        # Every other capability is gone, DAC_OVERRIDE included: root cannot write the
        # root-owned read-only harness files, nor any file it does not own.
        user="0:0",
        cap_drop=["ALL"],
        cap_add=["SETUID", "SETGID", "KILL"],
        security_opt=["no-new-privileges:true"],  # no exec can gain privileges (setuid files)
        network_disabled=True,
        network_mode="none",
        read_only=True,
        # The only writable places: the run's own volume at /sandbox and a small /tmp that
        # cannot hold executables or device nodes, whose size counts against memory, and whose
        # count of files and folders is bounded (TMPFS_INODES).
        tmpfs={"/tmp": f"rw,noexec,nosuid,nodev,size={limits.tmpfs_mb}m,nr_inodes={TMPFS_INODES},mode=1777"},
        mounts=[Mount(target=WORKDIR, source=volume, type="volume", read_only=False)],
        working_dir=WORKDIR,
        mem_limit=memory,
        memswap_limit=memory,  # equal: no swap at all, so a memory hog dies instead of thrashing
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,  # fork and thread bombs stop here
        # No nproc: RLIMIT_NPROC counts every process of the uid on the whole host.
        ulimits=[
            Ulimit(name="core", soft=0, hard=0),
            Ulimit(name="fsize", soft=FSIZE_BYTES, hard=FSIZE_BYTES),
            Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
        ],
        init=True,  # a real PID 1 reaps orphans and forwards signals
        # No /dev/shm at all, and no System V queues, semaphores or shared memory (a segment's
        # creator may hand it to another owner, so removing the student's after a run is not
        # enough): nothing a run leaves there could reach the next run.
        ipc_mode="none",
        sysctls={"kernel.msgmni": "0", "kernel.sem": "0 0 0 0", "kernel.shmmni": "0", "kernel.shm_rmid_forced": "1"},
        # We read output through attach, never the log; this only bounds the daemon's disk.
        log_config=LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        environment=dict(SANDBOX_ENV),
        stop_signal="SIGKILL",  # nothing inside deserves a graceful stop
        tty=False,
        stdin_open=stdin,  # docker-py then sets StdinOnce: stdin closes when our one attach goes
        **extra,
    )

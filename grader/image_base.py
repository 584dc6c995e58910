"""The base image the sandbox is built FROM: choosing one, and making one offline.

A base already in the engine wins; otherwise a registry is tried (``PREFERRED_BASE``), and
with no registry a minimal Debian rootfs is debootstrapped and imported as ``OFFLINE_BASE``.
``grader.image`` calls ``select_base`` when no base is asked for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from grader.docker_engine import LABEL, Log, docker_client, image_exists, quiet, tail
from grader.errors import ImageBuildError

PREFERRED_BASE = "python:3.11-slim"
OFFLINE_BASE = "autograd-grader-base:bookworm"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

# A registry that answers at all answers "no" fast; one that does not answer gets this long.
PULL_TIMEOUT_S = 60
DEBOOTSTRAP_TIMEOUT_S = 1800


# --- choosing and making the base ------------------------------------------------------------


def _pull_quickly(client: docker.DockerClient, name: str, log: Log) -> bool:
    """Try to pull ``name``; give up after PULL_TIMEOUT_S without waiting for the daemon.

    docker-py pulls with no request timeout, so the pull runs in a daemon thread that we
    stop waiting for; a pull still running in the daemon is harmless.
    """
    repository, _, tag = name.partition(":")
    outcome: list[BaseException | None] = []

    def pull() -> None:
        try:
            client.images.pull(repository, tag=tag or "latest")
            outcome.append(None)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
            outcome.append(error)

    log(f"pulling {name} (up to {PULL_TIMEOUT_S} s)")
    thread = threading.Thread(target=pull, name="autograd-grader-pull", daemon=True)
    thread.start()
    thread.join(PULL_TIMEOUT_S)
    if not outcome:
        log(f"pulling {name} did not finish in {PULL_TIMEOUT_S} s")
        return False
    if outcome[0] is not None:
        log(f"cannot pull {name}: {str(outcome[0]).splitlines()[0][:200]}")
        return False
    return True


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root).rstrip("/") + "/"
    mounts: list[str] = []
    with open("/proc/self/mounts", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            point = fields[1].replace("\\040", " ") if len(fields) > 1 else ""
            if point.startswith(prefix):
                mounts.append(point)
    return sorted(mounts, key=len, reverse=True)


def _remove_rootfs(workdir: Path, log: Log) -> None:
    """Delete the debootstrap tree, but never through a mount it left behind.

    A debootstrap that failed half way can leave /proc, /sys or bind-mounted /dev nodes
    mounted inside the target; deleting through those would touch the host.
    """
    for point in _mounts_under(workdir):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    if _mounts_under(workdir):
        log(f"left {workdir} in place: something is still mounted inside it")
        return
    shutil.rmtree(workdir, ignore_errors=True)


def build_offline_base(*, client: docker.DockerClient | None = None, log: Log | None = None) -> str:
    """Make ``OFFLINE_BASE`` from Debian's archive, for engines that cannot reach a registry.

    debootstrap gives a minbase bookworm rootfs with python3 and python3-numpy; the tar of it
    is imported as a one-layer image.
    """
    client = client or docker_client()
    log = log or quiet
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if os.geteuid() != 0:
        raise ImageBuildError(
            f"no registry answered for {PREFERRED_BASE}, and building the offline base "
            f"{OFFLINE_BASE} with debootstrap needs root; rerun as root, or load "
            f"{PREFERRED_BASE} into the engine (`docker load`) and retry"
        )
    if not os.access(debootstrap, os.X_OK):
        raise ImageBuildError(
            f"no registry answered for {PREFERRED_BASE}, and debootstrap is not installed to "
            f"build the offline base {OFFLINE_BASE}: `apt-get install -y debootstrap` "
            f"(it needs {DEBIAN_MIRROR} to be reachable), or load {PREFERRED_BASE} with `docker load`"
        )
    if shutil.which("tar") is None:
        raise ImageBuildError("building the offline base needs GNU tar: `apt-get install -y tar`")

    workdir = Path(tempfile.mkdtemp(prefix="autograd-grader-rootfs-"))
    rootfs = workdir / "rootfs"
    archive = workdir / "rootfs.tar"
    started = time.monotonic()
    try:
        log(f"debootstrap {DEBIAN_SUITE} (minbase + python3, python3-numpy) into {rootfs}")
        try:
            done = subprocess.run(
                [
                    debootstrap,
                    "--variant=minbase",
                    "--include=python3,python3-numpy",
                    DEBIAN_SUITE,
                    str(rootfs),
                    DEBIAN_MIRROR,
                ],
                capture_output=True,
                text=True,
                timeout=DEBOOTSTRAP_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise ImageBuildError(f"debootstrap did not finish in {DEBOOTSTRAP_TIMEOUT_S} s") from error
        if done.returncode != 0:
            raise ImageBuildError(f"debootstrap failed (exit {done.returncode}):\n{tail(done.stdout + done.stderr)}")
        # Package caches are dead weight in an image that never installs anything again.
        for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"):
            for path in rootfs.glob(pattern):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        # GNU tar rather than tarfile: it keeps device nodes, hard links and numeric owners
        # exactly as debootstrap made them.
        packed = subprocess.run(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."],
            capture_output=True,
            text=True,
            check=False,
        )
        if packed.returncode != 0:
            raise ImageBuildError(f"cannot tar the rootfs:\n{tail(packed.stderr)}")
        repository, _, tag = OFFLINE_BASE.partition(":")
        log(f"importing {archive} ({archive.stat().st_size >> 20} MiB) as {OFFLINE_BASE}")
        # The SDK rather than the `docker` CLI: the engine may run without the CLI installed,
        # and its errors are translated here with the others.
        client.api.import_image_from_file(
            str(archive),
            repository=repository,
            tag=tag,
            changes=[
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "ENV LANG=C.UTF-8",
                f"LABEL {LABEL}-base=1",
            ],
        )
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise ImageBuildError(f"cannot import the offline base {OFFLINE_BASE}: {error}") from error
    except OSError as error:
        raise ImageBuildError(f"building the offline base {OFFLINE_BASE} failed: {error}") from error
    finally:
        _remove_rootfs(workdir, log)
    if not image_exists(OFFLINE_BASE, client=client):
        raise ImageBuildError(f"importing {OFFLINE_BASE} reported success but the image is missing")
    log(f"built {OFFLINE_BASE} in {time.monotonic() - started:.0f} s")
    return OFFLINE_BASE


def select_base(*, client: docker.DockerClient, log: Log) -> str:
    """The base to build FROM when none is asked for.

    A base already in the engine wins over a pull: grading must not depend on the network
    once the machine is set up, and the tag (which hashes the base) stays the same from one
    call to the next. Only when neither base is present do we try a registry, then Debian.
    """
    if image_exists(PREFERRED_BASE, client=client):
        return PREFERRED_BASE
    if image_exists(OFFLINE_BASE, client=client):
        return OFFLINE_BASE
    if _pull_quickly(client, PREFERRED_BASE, log):
        return PREFERRED_BASE
    log(f"no registry: building the offline base {OFFLINE_BASE} from Debian")
    return build_offline_base(client=client, log=log)

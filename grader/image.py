"""The sandbox image: where its definition lives, what it is tagged, and how it gets built.

The tag is ``autograd-grader:<12 hex>``, a hash of everything that goes into the image (the
Dockerfile, every file it copies, the base image), so an existing tag is trusted as up to
date and the image is rebuilt only when one of its inputs changes.

This module and ``grader.runners.docker`` are the only ones that talk to Docker; both turn
docker/requests errors into ``grader.errors`` exceptions here, at the boundary.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.models.images import Image

from grader.errors import ImageBuildError, SandboxUnavailable

SANDBOX_DIR = Path(__file__).resolve().parent.parent / "sandbox"
DOCKERFILE = "Dockerfile"
IMAGE_REPO = "autograd-grader"
LABEL = "autograd-grader"  # on the image, every container and every volume we create

# The environment the harness runs with, in the container or under the local runner.
# Fixed values only: nothing from the host environment reaches student code.
SANDBOX_ENV: dict[str, str] = {
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",  # reproducible set/dict order between runs
    "OPENBLAS_NUM_THREADS": "1",  # numpy must not spawn threads against the pids limit
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}

PREFERRED_BASE = "python:3.11-slim"
OFFLINE_BASE = "autograd-grader-base:bookworm"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

# A slow daemon (first start, busy disk) can take a while to answer; failing early there
# would report "Docker unavailable" on a machine where it is merely slow.
CLIENT_TIMEOUT_S = 120
# A registry that answers at all answers "no" fast; one that does not answer gets this long.
PULL_TIMEOUT_S = 60
DEBOOTSTRAP_TIMEOUT_S = 1800
LOG_TAIL_LINES = 40

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def docker_client() -> docker.DockerClient:
    """A client for the local engine, or SandboxUnavailable saying what is wrong."""
    try:
        client = docker.from_env(timeout=CLIENT_TIMEOUT_S)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise SandboxUnavailable(
            f"the Docker daemon is not reachable ({error}); start it (e.g. `dockerd` or "
            "`systemctl start docker`), check DOCKER_HOST and access to /var/run/docker.sock, "
            "or grade with the local runner, which is less isolated"
        ) from error
    return client


def image_exists(tag: str, *, client: docker.DockerClient | None = None) -> bool:
    """Whether the engine has an image by this name or id."""
    client = client or docker_client()
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise SandboxUnavailable(f"cannot look up image {tag}: {error}") from error
    return True


# --- the inputs of the image ---------------------------------------------------------------


def _copied_sources(dockerfile: str) -> list[str]:
    """Context paths named by the Dockerfile's COPY lines: the hash and the context use these.

    Reading them from the Dockerfile keeps one list of "what goes into the image".
    """
    sources: list[str] = []
    logical = dockerfile.replace("\\\n", " ")
    for line in logical.splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        if len(args) < 2 or args[0].startswith("["):
            raise ImageBuildError(f"unsupported COPY line in the Dockerfile: {line.strip()}")
        sources.extend(a.rstrip("/") for a in args[:-1])
    return sources


def _is_cache(path: Path) -> bool:
    return "__pycache__" in path.parts or path.suffix == ".pyc"


def _context_files(sandbox_dir: Path) -> list[tuple[str, Path]]:
    """(context path, file) for the Dockerfile and every file it copies, sorted by name."""
    dockerfile = sandbox_dir / DOCKERFILE
    if not dockerfile.is_file():
        raise ImageBuildError(f"no Dockerfile at {dockerfile}")
    files: dict[str, Path] = {DOCKERFILE: dockerfile}
    for source in _copied_sources(dockerfile.read_text(encoding="utf-8")):
        root = sandbox_dir / source
        if root.is_file():
            files[source] = root
        elif root.is_dir():
            for path in root.rglob("*"):
                # Bytecode caches come and go with test runs; the image never uses them.
                if path.is_file() and not _is_cache(path.relative_to(sandbox_dir)):
                    files[path.relative_to(sandbox_dir).as_posix()] = path
        else:
            raise ImageBuildError(f"the Dockerfile copies {source}, which is missing from {sandbox_dir}")
    return sorted(files.items())


def image_tag(base: str, *, base_id: str = "", sandbox_dir: Path = SANDBOX_DIR) -> str:
    """``autograd-grader:<12 hex>`` for these inputs; the same inputs give the same tag."""
    digest = hashlib.sha256()
    # Length-prefixed fields, so no file boundary can be shifted to collide with another.
    fields: list[bytes] = [b"base", base.encode(), b"base-id", base_id.encode()]
    for name, path in _context_files(sandbox_dir):
        fields += [name.encode(), path.read_bytes()]
    for field in fields:
        digest.update(len(field).to_bytes(8, "big"))
        digest.update(field)
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def _context_tar(sandbox_dir: Path) -> io.BytesIO:
    """The build context: exactly the hashed files, so the tag describes what is built."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, path in _context_files(sandbox_dir):
            data = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0  # the hash already pins content; mtimes would only add noise
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


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


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def build_offline_base(*, client: docker.DockerClient | None = None, log: Log | None = None) -> str:
    """Make ``OFFLINE_BASE`` from Debian's archive, for engines that cannot reach a registry.

    debootstrap gives a minbase bookworm rootfs with python3 and python3-numpy; the tar of it
    is imported as a one-layer image.
    """
    client = client or docker_client()
    log = log or _quiet
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
            raise ImageBuildError(f"debootstrap failed (exit {done.returncode}):\n{_tail(done.stdout + done.stderr)}")
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
            raise ImageBuildError(f"cannot tar the rootfs:\n{_tail(packed.stderr)}")
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


# --- building --------------------------------------------------------------------------------


@contextmanager
def _build_lock() -> Iterator[None]:
    """One build at a time on this machine: parallel test workers would all debootstrap."""
    path = Path(tempfile.gettempdir()) / "autograd-grader-image.lock"
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _base_id(client: docker.DockerClient, base: str) -> str:
    try:
        image: Image = client.images.get(base)
    except docker.errors.ImageNotFound:
        return ""  # the build will pull it or fail with a clear message
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise SandboxUnavailable(f"cannot look up image {base}: {error}") from error
    return str(image.id)


def _log_lines(events: Any) -> list[str]:
    lines: list[str] = []
    for event in events or ():
        if isinstance(event, dict):
            text = event.get("stream") or event.get("error") or event.get("status") or ""
            lines.extend(str(text).rstrip("\n").splitlines())
    return lines


def ensure_image(*, force: bool = False, base: str | None = None, log: Log | None = None) -> str:
    """Return the tag of an up-to-date sandbox image, building it (and its base) if needed."""
    log = log or _quiet
    client = docker_client()
    with _build_lock():
        chosen = base or select_base(client=client, log=log)
        # The base's id is hashed too: a re-pulled python:3.11-slim gives a new tag.
        tag = image_tag(chosen, base_id=_base_id(client, chosen))
        if not force and image_exists(tag, client=client):
            return tag
        replaced = _base_id(client, tag) if force else ""
        log(f"building {tag} FROM {chosen}")
        started = time.monotonic()
        try:
            _, events = client.images.build(
                fileobj=_context_tar(SANDBOX_DIR),
                custom_context=True,
                buildargs={"BASE": chosen},
                tag=tag,
                rm=True,
                forcerm=True,
                labels={LABEL: "1"},
                nocache=force,  # a forced rebuild must not come back from the layer cache
            )
        except docker.errors.BuildError as error:
            raise ImageBuildError(
                f"building {tag} FROM {chosen} failed: {error.msg}\n{_tail(chr(10).join(_log_lines(error.build_log)))}"
            ) from error
        except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
            raise ImageBuildError(f"building {tag} FROM {chosen} failed: {error}") from error
        for line in _log_lines(events):
            log(line)
        log(f"built {tag} in {time.monotonic() - started:.0f} s")
        if replaced and replaced != _base_id(client, tag):
            _remove_if_unused(client, replaced)
        return tag


def _remove_if_unused(client: docker.DockerClient, image_id: str) -> None:
    """Drop the image a forced rebuild replaced; one still used by a container stays."""
    try:
        client.images.remove(image_id, noprune=False)
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        pass  # in use (409) or already gone: either way nothing to do

"""The sandbox image: where its definition lives, what it is tagged, and how it gets built.

The tag is ``autograd-grader:<12 hex>``, a hash of everything that goes into the image (the
Dockerfile, every file it copies, the base image), so an existing tag is trusted as up to
date and the image is rebuilt only when one of its inputs changes.

The base it is built FROM is chosen (or made offline) by ``grader.image_base``; the engine
connection, its label and the build-log helpers live in ``grader.docker_engine`` and are
re-exported here where callers know them from this module.

These modules and ``grader.runners.docker`` are the only ones that talk to Docker; all of them
turn docker/requests errors into ``grader.errors`` exceptions here, at the boundary.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.models.images import Image

from grader.docker_engine import LABEL as LABEL
from grader.docker_engine import Log, image_exists, quiet, tail
from grader.docker_engine import docker_client as docker_client
from grader.errors import ImageBuildError, SandboxUnavailable
from grader.image_base import select_base
from sandbox.harness import wire

SANDBOX_DIR = Path(__file__).resolve().parent.parent / "sandbox"
DOCKERFILE = "Dockerfile"
IMAGE_REPO = "autograd-grader"

# The environment the harness runs with, in the container or under the local runner.
# Fixed values only: nothing from the host environment reaches student code.
SANDBOX_ENV: dict[str, str] = {
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",  # reproducible set/dict order between runs
    # The C allocator, not Python's own: pymalloc's arenas sit wherever the randomised address
    # layout puts them and lose a pool when misaligned, so the same program would meet the memory
    # limit at a different point from one run to the next.
    "PYTHONMALLOC": "malloc",
    # One malloc arena: a second thread (the child's record reporter, or the student's own) would
    # otherwise reserve a 64 MiB arena of its own against the memory limit.
    "MALLOC_ARENA_MAX": "1",
    "OPENBLAS_NUM_THREADS": "1",  # numpy must not spawn threads against the pids limit
    "OMP_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}

# The harness interpreter's flags: no user site-packages (-s), no script or working directory
# on sys.path (-P), no .pyc writes (-B). Not -I: it implies -E, which would ignore the two
# PYTHON* values above. The environment is the grader's (SANDBOX_ENV over the image's own), and
# the harness refuses to start when it is not (sandbox/harness/supervisor.py).
HARNESS_FLAGS: tuple[str, ...] = ("-s", "-P", "-B")


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


RECIPE_LABEL = "autograd-grader.recipe"


def _digest(fields: list[bytes]) -> str:
    digest = hashlib.sha256()
    # Length-prefixed fields, so no file boundary can be shifted to collide with another.
    for field in fields:
        digest.update(len(field).to_bytes(8, "big"))
        digest.update(field)
    return digest.hexdigest()


def recipe_digest(sandbox_dir: Path = SANDBOX_DIR) -> str:
    """12 hex naming what the sandbox runs (the Dockerfile, the harness, the student's uid),
    whatever base it is built FROM on a host: the same release gives the same recipe on every
    grading host, so a job can name the sandbox it must be graded in."""
    fields: list[bytes] = [b"student-uid", str(wire.STUDENT_UID).encode()]
    for name, path in _context_files(sandbox_dir):
        fields += [name.encode(), path.read_bytes()]
    return _digest(fields)[:12]


def image_recipe(tag: str, *, client: docker.DockerClient | None = None) -> str:
    """The recipe an image says it was built from ("" when it has no such label)."""
    client = client or docker_client()
    try:
        labels = client.images.get(tag).labels or {}
    except docker.errors.ImageNotFound:
        return ""
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        raise SandboxUnavailable(f"cannot look up image {tag}: {error}") from error
    return str(labels.get(RECIPE_LABEL, ""))


def image_tag(base: str, *, base_id: str = "", sandbox_dir: Path = SANDBOX_DIR) -> str:
    """``autograd-grader:<12 hex>`` for these inputs; the same inputs give the same tag."""
    fields: list[bytes] = [b"base", base.encode(), b"base-id", base_id.encode()]
    for name, path in _context_files(sandbox_dir):
        fields += [name.encode(), path.read_bytes()]
    return f"{IMAGE_REPO}:{_digest(fields)[:12]}"


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
    log = log or quiet
    client = docker_client()
    with _build_lock():
        chosen = base or select_base(client=client, log=log)
        # The base's id is hashed too: a re-pulled python:3.11-slim gives a new tag.
        tag = image_tag(chosen, base_id=_base_id(client, chosen))
        recipe = recipe_digest(SANDBOX_DIR)
        if not force and image_exists(tag, client=client):
            found = image_recipe(tag, client=client)
            if found == recipe:
                return tag
            # Not what this tag names (retagged by hand, or built before images carried their
            # recipe): build it again; the layer cache makes a correct image quick to rebuild.
            log(f"{tag} says recipe {found or 'none'}, not {recipe}: rebuilding it")
        replaced = _base_id(client, tag) if force else ""
        log(f"building {tag} FROM {chosen}")
        started = time.monotonic()
        try:
            _, events = client.images.build(
                fileobj=_context_tar(SANDBOX_DIR),
                custom_context=True,
                buildargs={"BASE": chosen, "STUDENT_UID": str(wire.STUDENT_UID)},
                tag=tag,
                rm=True,
                forcerm=True,
                labels={LABEL: "1", RECIPE_LABEL: recipe},
                nocache=force,  # a forced rebuild must not come back from the layer cache
            )
        except docker.errors.BuildError as error:
            raise ImageBuildError(
                f"building {tag} FROM {chosen} failed: {error.msg}\n{tail(chr(10).join(_log_lines(error.build_log)))}"
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

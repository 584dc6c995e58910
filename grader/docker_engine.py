"""The local Docker engine: connecting to it, asking it for an image, and the build-log helpers.

The bottom layer of the image code: ``grader.image`` (the sandbox image) and
``grader.image_base`` (the base it is built FROM) both reach the engine through here, and
share its label and its log plumbing. Docker and requests errors become ``grader.errors``
exceptions here, at the boundary.
"""

from __future__ import annotations

from collections.abc import Callable

import docker
import docker.errors
import requests.exceptions

from grader.errors import SandboxUnavailable

LABEL = "autograd-grader"  # on the image, every container and every volume we create

# A slow daemon (first start, busy disk) can take a while to answer; failing early there
# would report "Docker unavailable" on a machine where it is merely slow.
CLIENT_TIMEOUT_S = 120
LOG_TAIL_LINES = 40

Log = Callable[[str], None]


def quiet(_: str) -> None:
    pass


def tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def docker_client() -> docker.DockerClient:
    """A client for the local engine, or SandboxUnavailable saying what is wrong."""
    client: docker.DockerClient | None = None
    try:
        client = docker.from_env(timeout=CLIENT_TIMEOUT_S)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as error:
        if client is not None:
            client.close()  # its connection pool would otherwise be left open (a ResourceWarning)
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

"""A warm sandbox's inputs, read from standard input once the fork server is up.

A warm container is started ahead of demand; its harness starts the fork server (which holds
no plan), then blocks here. The host sends one header line, ``{"plan": N, "source": M,
"filename": NAME}``, then exactly N bytes of plan and M bytes of submission. They are written
where a cold container finds them (the host's tar before start): ``plan.json`` and
``submission/NAME`` in the run's fresh folder, root-owned and readable by root only.
"""

from __future__ import annotations

import json
import os
import re
from typing import BinaryIO

MAX_HEADER = 4096
MAX_PLAN = 16 * 1024 * 1024
MAX_SOURCE = 8 * 1024 * 1024
_FILENAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
PLAN_NAME, SUBMISSION_DIR = "plan.json", "submission"
# Written to stderr once the inputs are in place: the host knows the container took them (one
# that dies before is replaced, its run done in a fresh container, nobody charged).
ACK = b"harness: inputs received"


class BadInputs(Exception):
    """What arrived is not a plan and a submission as the host sends them."""


def header(plan: bytes, source: bytes, filename: str) -> bytes:
    """What the host writes before the two bodies."""
    return json.dumps({"plan": len(plan), "source": len(source), "filename": filename}).encode() + b"\n"


def _exactly(stream: BinaryIO, count: int) -> bytes:
    chunks, missing = [], count
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            raise BadInputs(f"the inputs ended {missing} bytes early")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def receive(stream: BinaryIO, workdir: str) -> None:
    line = stream.readline(MAX_HEADER)
    try:
        head = json.loads(line)
        plan_size, source_size, filename = int(head["plan"]), int(head["source"]), str(head["filename"])
    except (ValueError, KeyError, TypeError) as error:
        raise BadInputs(f"no input header ({type(error).__name__})") from None
    if not (0 < plan_size <= MAX_PLAN and 0 <= source_size <= MAX_SOURCE) or not _FILENAME.fullmatch(filename):
        raise BadInputs("the input header is out of bounds")
    plan, source = _exactly(stream, plan_size), _exactly(stream, source_size)
    _write(os.path.join(workdir, PLAN_NAME), plan)
    folder = os.path.join(workdir, SUBMISSION_DIR)
    os.mkdir(folder, 0o700)
    _write(os.path.join(folder, filename), source)
    os.chmod(folder, 0o500)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)

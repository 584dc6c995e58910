"""What a child may say to the harness, checked strictly: the schema of every record kind.

A child runs student code, so each line it sends is untrusted: a line that is not JSON, a
record of a kind its task does not send, a field of the wrong type, a program index out of
range, or a second record for the same program and phase is the submission's fault. The
harness stops that child and reports the probe as ``bad_record``; it never raises.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import wire

MAX_KEY = 80
MAX_TEXT = 400
MAX_OBSERVATIONS = 4096
MAX_NAMES = 512


class BadRecord(Exception):
    """The child sent something the grader's schema does not allow; the message says what."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def parse_line(line: bytes, limit: int) -> dict[str, Any]:
    if len(line) > limit:
        raise BadRecord(f"a record of {len(line)} bytes (the limit is {limit})")
    try:
        record = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        raise BadRecord(f"a line that is not a JSON record ({type(error).__name__})") from None
    if not isinstance(record, dict):
        raise BadRecord("a JSON value that is not a record")
    return record


def _value_ok(value: Any) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False  # 1e400 parses as inf: the harness reports non-finite values as markers only
    if isinstance(value, (bool, int, float, str)):
        return not isinstance(value, str) or len(value) <= MAX_TEXT
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        return key in wire.MARKERS and isinstance(inner, str) and len(inner) <= MAX_TEXT
    if isinstance(value, list):
        return len(value) <= MAX_NAMES and all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value)
    return False


def check_observations(obs: Any) -> dict[str, Any]:
    if not isinstance(obs, dict) or len(obs) > MAX_OBSERVATIONS:
        raise BadRecord("observations that are not a mapping of names to values")
    for key, value in obs.items():
        if not isinstance(key, str) or len(key) > MAX_KEY or not _value_ok(value):
            raise BadRecord(f"an observation of the wrong shape ({str(key)[:40]!r})")
    return obs


def _check_error(error: Any) -> None:
    if not isinstance(error, dict) or set(error) - {"type", "message", "line", "column"}:
        raise BadRecord("an error summary of the wrong shape")
    if not isinstance(error.get("type", ""), str) or not isinstance(error.get("message", ""), str):
        raise BadRecord("an error summary of the wrong shape")
    for place in (error.get("line"), error.get("column")):
        if place is not None and (not isinstance(place, int) or isinstance(place, bool)):
            raise BadRecord("an error summary of the wrong shape")


def _check_keys(record: dict[str, Any], allowed: set[str]) -> None:
    extra = set(record) - allowed
    if extra:
        raise BadRecord(f"a {record.get('t')!r} record with unexpected fields ({', '.join(sorted(extra))[:80]})")


@dataclass
class ProgramRecords:
    """The schema of a program-running child (api, programs, oracle): obs and err per index."""

    count: int
    seen: set[tuple[int, str]] = field(default_factory=set)  # (program, phase) received
    finished: set[int] = field(default_factory=set)  # programs with a final or error record

    def accept(self, record: dict[str, Any]) -> dict[str, Any]:
        kind = record.get("t")
        if kind not in (wire.OBS, wire.ERR):
            raise BadRecord(f"a record of kind {str(kind)[:20]!r}, which this probe does not send")
        index = record.get("program")
        if kind == wire.ERR and index is None:
            _check_keys(record, {"t", "stage", "error"})
            _check_error(record.get("error"))
            raise BadRecord("an error outside every program: " + str(record["error"].get("type", ""))[:60])
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.count:
            raise BadRecord("a record for a program this probe does not have")
        if kind == wire.OBS:
            _check_keys(record, {"t", "program", "phase", "obs"})
            phase = record.get("phase")
            if phase not in (wire.FORWARD, wire.FINAL):
                raise BadRecord("an observation of an unknown phase")
        else:
            _check_keys(record, {"t", "program", "stage", "error", "obs"})
            if not isinstance(record.get("stage"), str):
                raise BadRecord("an error record without a stage")
            _check_error(record.get("error"))
            phase = "error"
        check_observations(record.get("obs"))
        # A final or error record ends a program: nothing more may come for it, and nothing twice.
        if index in self.finished or (index, phase) in self.seen:
            raise BadRecord(f"a second record for program {index}")
        self.seen.add((index, phase))
        if phase != wire.FORWARD:
            self.finished.add(index)
        return record


@dataclass
class LoadRecords:
    """The schema of the load child: one ``load`` record."""

    seen: bool = False

    def accept(self, record: dict[str, Any]) -> dict[str, Any]:
        if record.get("t") != wire.LOAD or self.seen:
            raise BadRecord("a record the loading step does not send")
        _check_keys(record, {"t", "ok", "notices", "stand_ins_used", "leaf_data", "error"})
        if not isinstance(record.get("ok"), bool):
            raise BadRecord("a load record without a yes/no outcome")
        for name in ("notices", "stand_ins_used"):
            value = record.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise BadRecord(f"a load record whose {name} is not a list of texts")
        if "error" in record:
            _check_error(record["error"])
        if "leaf_data" in record and not _value_ok(record["leaf_data"]):
            raise BadRecord("a load record with an unreadable leaf value")
        self.seen = True
        return record


@dataclass
class ScriptRecords:
    """The schema of a script child: one ``started`` record, sent before any student code runs."""

    seen: bool = False

    def accept(self, record: dict[str, Any]) -> dict[str, Any]:
        if record != {"t": wire.STARTED} or self.seen:
            raise BadRecord("a record a script run does not send")
        self.seen = True
        return record

"""SubmissionResult <-> JSON, losslessly, for the class store and `grader export`.

Versioned: a store written by another version of the result model is refused with a clear
message rather than half-read.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from .errors import StoreError
from .results import (
    CheckResult,
    Comparison,
    Counterexample,
    Diagnosis,
    FdRow,
    FigureEdge,
    FigureNode,
    GraphFigure,
    LoadReport,
    Outcome,
    SectionResult,
    Status,
    SubmissionResult,
    Visibility,
)
from .runners.base import Evidence, RawRun

FORMAT = 1


class StoredResultError(StoreError):
    """A stored result cannot be read back (written by an incompatible version, or damaged)."""


def result_to_json(result: SubmissionResult) -> str:
    data = dataclasses.asdict(result)
    data["status"] = result.status.value
    for check, source in zip(data["checks"], result.checks, strict=True):
        check["outcome"] = source.outcome.value
        check["visibility"] = source.visibility.value
    return json.dumps({"format": FORMAT, "result": data}, allow_nan=False, separators=(",", ":"))


def result_from_json(text: str) -> SubmissionResult:
    try:
        wrapper = json.loads(text)
        if wrapper.get("format") != FORMAT:
            raise StoredResultError(f"stored result format {wrapper.get('format')!r}, this grader reads {FORMAT}")
        return _result(wrapper["result"])
    except (KeyError, TypeError, ValueError) as error:
        raise StoredResultError(f"a stored result cannot be read: {type(error).__name__}: {error}") from error


@dataclasses.dataclass(frozen=True)
class ResultSummary:
    """What a class table needs of a stored result, read without building every check."""

    status: Status
    sections: dict[str, float]  # tag -> points
    review: tuple[str, ...]


def summary_from_json(text: str) -> ResultSummary:
    try:
        wrapper = json.loads(text)
        if wrapper.get("format") != FORMAT:
            raise StoredResultError(f"stored result format {wrapper.get('format')!r}, this grader reads {FORMAT}")
        data = wrapper["result"]
        sections = {str(s["tag"]): float(s["points"]) for s in data["sections"]}
        return ResultSummary(Status(data["status"]), sections, tuple(str(r) for r in data["review"]))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise StoredResultError(f"a stored result cannot be read: {type(error).__name__}: {error}") from error


def _result(data: dict[str, Any]) -> SubmissionResult:
    return SubmissionResult(
        **{
            **data,
            "status": Status(data["status"]),
            "sections": tuple(SectionResult(**s) for s in data["sections"]),
            "checks": tuple(_check(c) for c in data["checks"]),
            "load": LoadReport(**{**data["load"], "notices": tuple(data["load"]["notices"])}),
            "diagnoses": tuple(Diagnosis(**{**d, "checks": tuple(d["checks"])}) for d in data["diagnoses"]),
            "review": tuple(data["review"]),
            "figures": tuple(_figure(f) for f in data.get("figures", ())),
        }
    )


def _figure(data: dict[str, Any]) -> GraphFigure:
    return GraphFigure(
        **{
            **data,
            "nodes": tuple(FigureNode(**{**n, "visits": tuple(n["visits"])}) for n in data["nodes"]),
            "edges": tuple(FigureEdge(**e) for e in data["edges"]),
            "order": tuple(data["order"]),
        }
    )


def _check(data: dict[str, Any]) -> CheckResult:
    return CheckResult(
        **{
            **data,
            "visibility": Visibility(data["visibility"]),
            "outcome": Outcome(data["outcome"]),
            "comparisons": tuple(Comparison(**c) for c in data["comparisons"]),
            "notes": tuple(data["notes"]),
            "fd_rows": tuple(FdRow(**r) for r in data.get("fd_rows", ())),
            "counterexample": _counterexample(data.get("counterexample")),
        }
    )


def _counterexample(data: dict[str, Any] | None) -> Counterexample | None:
    if data is None:
        return None
    comparisons = tuple(Comparison(**c) for c in data["comparisons"])
    figure = _figure(data["figure"]) if data.get("figure") else None
    return Counterexample(**{**data, "comparisons": comparisons, "figure": figure})


def evidence_to_json(evidence: Evidence) -> str:
    raw = dataclasses.asdict(evidence.raw)
    raw["stdout"] = base64.b64encode(evidence.raw.stdout).decode("ascii")
    raw["stderr_tail"] = base64.b64encode(evidence.raw.stderr_tail).decode("ascii")
    body = {"format": FORMAT, "raw": raw, "nonce": evidence.nonce, "plan_digest": evidence.plan_digest}
    return json.dumps(body, allow_nan=False, separators=(",", ":"))


def evidence_from_json(text: str) -> Evidence:
    try:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise StoredResultError(f"stored sandbox output format {data.get('format')!r}, expected {FORMAT}")
        raw = data["raw"]
        raw["stdout"] = base64.b64decode(raw["stdout"])
        raw["stderr_tail"] = base64.b64decode(raw["stderr_tail"])
        return Evidence(RawRun(**raw), str(data["nonce"]), str(data["plan_digest"]))
    except (KeyError, TypeError, ValueError) as error:
        raise StoredResultError(f"stored sandbox output cannot be read: {type(error).__name__}: {error}") from error

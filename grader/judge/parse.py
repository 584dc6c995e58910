"""Read what the sandbox printed: untrusted bytes in, typed records out.

Only lines carrying this run's nonce count. JSON is parsed strictly (no NaN or Infinity
constants, bounded size); every record is checked against the plan (known probe ids,
program indices in range) and the wire vocabulary; anything else is dropped and counted,
never trusted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, cast

from sandbox.harness import wire
from sandbox.harness.probes import programs as executors

from ..plan import Plan, PlannedProbe
from .records import (
    ErrorInfo,
    LoadRecord,
    MutantRecord,
    Observations,
    Observed,
    ProbeEnd,
    ProbeRecords,
    ProgramError,
    SandboxReport,
    ScriptRun,
    ShrunkRecord,
    Unreadable,
)

MAX_LINE = 1024 * 1024
MAX_TEXT = 400
MAX_OUTPUT = 64 * 1024


def _reject(name: str) -> Any:
    raise ValueError(name)


def clean_text(value: str, limit: int) -> str:
    """At most ``limit`` characters, with lone surrogates (valid in JSON escapes, invalid in
    UTF-8) replaced: no student string may make a report unwritable."""
    return value[:limit].encode("utf-8", "replace").decode("utf-8")


def observed_value(value: Any) -> tuple[bool, Observed | None]:
    """One observation as the harness encodes it, typed; (False, None) when malformed."""
    if isinstance(value, bool):
        return True, value
    if isinstance(value, (int, float)):
        try:
            return True, float(value)
        except OverflowError:
            return True, Unreadable(wire.NONFINITE, "overflow")
    if isinstance(value, str):
        return True, clean_text(value, MAX_TEXT)
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in wire.MARKERS and isinstance(inner, str):
            return True, Unreadable(key, clean_text(inner, 60))
    if isinstance(value, list) and len(value) <= 512 and all(isinstance(v, str) for v in value):
        return True, tuple(clean_text(v, 60) for v in value)
    return False, None


def observations(raw: Any) -> dict[str, Observed] | None:
    """A whole observation mapping, typed; None when any key or value is malformed."""
    if not isinstance(raw, dict) or len(raw) > 4096:
        return None
    out: dict[str, Observed] = {}
    for key, value in raw.items():
        ok, clean = observed_value(value)
        if not ok or clean is None or not isinstance(key, str) or len(key) > 80:
            return None
        out[key] = clean
    return out


def _texts(value: Any, limit: int, count: int) -> tuple[str, ...]:
    """A list of short strings, or empty: a malformed field never raises."""
    if not isinstance(value, list):
        return ()
    return tuple(clean_text(v, limit) for v in value if isinstance(v, str))[:count]


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return clean_text(value, limit) if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
        return float(value)
    return 0.0


def error_info(raw: Any) -> ErrorInfo | None:
    if not isinstance(raw, dict):
        return None
    return ErrorInfo(
        type=_text(raw.get("type"), 60),
        message=_text(raw.get("message")),
        line=_int(raw.get("line")),
        column=_int(raw.get("column")),
    )


@dataclass
class _ProbeBuilder:
    forward: dict[int, Observations] = field(default_factory=dict)
    final: dict[int, Observations] = field(default_factory=dict)
    errors: dict[int, ProgramError] = field(default_factory=dict)
    mutants: dict[str, MutantRecord] = field(default_factory=dict)
    end: ProbeEnd | None = None
    shrunk: ShrunkRecord | None = None

    def freeze(self) -> ProbeRecords:
        return ProbeRecords(self.forward, self.final, self.errors, self.mutants, self.end, self.shrunk)


@dataclass
class _Builder:
    planned: dict[str, PlannedProbe]
    load: LoadRecord | None = None
    probes: dict[str, _ProbeBuilder] = field(default_factory=dict)
    complete: bool = False
    dropped: int = 0
    duplicates: int = 0

    def probe(self, probe_id: str) -> _ProbeBuilder:
        return self.probes.setdefault(probe_id, _ProbeBuilder())

    def freeze(self) -> SandboxReport:
        probes = {key: value.freeze() for key, value in self.probes.items()}
        return SandboxReport(self.load, probes, self.complete, self.dropped, self.duplicates)


def parse_output(stdout: bytes, *, nonce: str, plan: Plan) -> SandboxReport:
    prefix = f"{wire.PREFIX}{nonce} ".encode()
    report = _Builder(planned={p.id: p for p in plan.probes})
    for line in stdout.split(b"\n"):
        if not line.startswith(prefix):
            if line.strip():
                report.dropped += 1
            continue
        body = line[len(prefix) :]
        try:
            if len(body) > MAX_LINE:
                raise ValueError("line too long")
            record = json.loads(body.decode("utf-8"), parse_constant=_reject)
        except (ValueError, RecursionError, UnicodeDecodeError):
            report.dropped += 1
            continue
        if not isinstance(record, dict) or not _accept(record, report):
            report.dropped += 1
    return report.freeze()


def _load(record: dict[str, Any]) -> LoadRecord | None:
    if any(not isinstance(record.get(k, []), list) for k in ("extra_args", "stand_ins_used", "notices")):
        return None
    ok = record.get("ok") is True
    failure = record.get("failure")  # only a failed load has one
    return LoadRecord(
        ok=ok,
        mode=_text(record.get("mode"), 20),
        class_name=_text(record.get("class_name"), 60),
        extra_args=_texts(record.get("extra_args"), 40, 8),
        stand_ins_used=_texts(record.get("stand_ins_used"), 60, 10),
        notices=_texts(record.get("notices"), MAX_TEXT, 12),
        error=error_info(record.get("error")),
        failure=cast(wire.LoadFailure, failure) if failure in wire.LOAD_FAILURES and not ok else None,
        output=_text(record.get("output"), MAX_OUTPUT),
        output_limit=record.get("output_limit") is True,
        timed_out=record.get("timed_out") is True,
        memory_error=record.get("memory_error") is True,
        import_seconds=_seconds(record.get("import_seconds")),
    )


def _accept(record: dict[str, Any], report: _Builder) -> bool:
    kind = record.get("t")
    if kind == wire.END:
        report.complete = True
        return True
    if kind == wire.LOAD:
        if report.load is not None:
            report.duplicates += 1
            return True
        report.load = _load(record)
        return report.load is not None
    probe_id = record.get("probe")
    if not isinstance(probe_id, str) or probe_id not in report.planned:
        return False
    probe = report.probe(probe_id)
    planned = report.planned[probe_id]
    if kind in (wire.OBS, wire.ERR):
        return _program_record(kind, record, report, probe, len(planned.programs))
    if kind == wire.MUTANT:
        return _mutant(report, probe, planned, record)
    if kind == wire.SHRUNK:
        if probe.shrunk is not None:
            report.duplicates += 1
            return True
        probe.shrunk = shrunk_record(record, len(planned.programs)) if planned.shrink else None
        return probe.shrunk is not None
    if kind == wire.PROBE_END:
        if probe.end is not None:
            report.duplicates += 1
            return True
        probe.end = _probe_end(record)
        return probe.end is not None
    return False


def _program_record(kind: str, record: dict[str, Any], report: _Builder, probe: _ProbeBuilder, count: int) -> bool:
    index = record.get("program")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < max(count, 1):
        return False
    obs = observations(record.get("obs", {}))
    if obs is None:
        return False
    if kind == wire.ERR:
        if index in probe.errors:
            report.duplicates += 1
        else:
            probe.errors[index] = ProgramError(_text(record.get("stage"), 200), error_info(record.get("error")), obs)
        return True
    phase = record.get("phase")
    if phase not in (wire.FORWARD, wire.FINAL):
        return False
    target = probe.forward if phase == wire.FORWARD else probe.final
    if index in target:
        report.duplicates += 1
    else:
        target[index] = obs
    return True


MAX_SHRUNK_LEAVES, MAX_SHRUNK_STEPS = 8, 64
# What the executors run, with each operation's operand count (the same vocabulary, not a copy).
_STEP_OPS = {**dict.fromkeys(executors.BINARY, 2), **dict.fromkeys((*executors.UNARY_METHODS, "neg"), 1)}


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 20 and value.isidentifier()


def _number(value: Any) -> bool:
    """A finite number a float holds (JSON may carry an integer far past any float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def shrunk_record(record: dict[str, Any], count: int) -> ShrunkRecord | None:
    """A counterexample of the right shape: a program the executors can run (known operations,
    operands already built, one final backward from a built node), or None."""
    index, shrunk, obs = record.get("program"), record.get("shrunk"), observations(record.get("obs"))
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or obs is None:
        return None
    if not isinstance(shrunk, dict):
        return None
    leaves, steps = shrunk.get("leaves"), shrunk.get("steps")
    if not isinstance(leaves, dict) or not isinstance(steps, list):
        return None
    if not 0 < len(leaves) <= MAX_SHRUNK_LEAVES or not 1 < len(steps) <= MAX_SHRUNK_STEPS:
        return None
    if not all(_name(k) and _number(v) for k, v in leaves.items()):
        return None
    built = set(leaves)
    for step in steps[:-1]:
        if not isinstance(step, list) or len(step) < 3 or step[1] not in _STEP_OPS:
            return None
        target, op, *args = step
        if not _name(target) or target in built or len(args) != _STEP_OPS[op]:
            return None
        if not all(a in built if isinstance(a, str) else _number(a) for a in args):
            return None
        if op == "pow" and not _number(args[1]):
            return None  # an exponent is a constant in every program the grader builds
        built.add(target)
    last = steps[-1]
    if not (isinstance(last, list) and len(last) == 3 and last[:2] == ["", "backward"] and last[2] in built):
        return None
    return ShrunkRecord(index, {k: float(v) for k, v in leaves.items()}, tuple(tuple(s) for s in steps), obs)


def _probe_end(record: dict[str, Any]) -> ProbeEnd | None:
    status = record.get("status")
    if status not in wire.END_STATUSES:
        return None
    return ProbeEnd(
        status=cast(wire.EndStatus, status),
        reason=_text(record.get("reason"), 40),
        signal=_text(record.get("signal"), 20),
        exit_code=_int(record.get("exit_code")),
        output=_text(record.get("output"), MAX_OUTPUT),
        output_truncated=record.get("output_truncated") is True,
        lingering=record.get("lingering") is True,
        elapsed=float(record["elapsed"])
        if isinstance(record.get("elapsed"), (int, float)) and not isinstance(record.get("elapsed"), bool)
        else 0.0,
    )


def _script(raw: dict[str, Any]) -> ScriptRun | None:
    outcome = raw.get("outcome")
    if outcome not in wire.SCRIPT_OUTCOMES:
        return None
    lines = raw.get("lines", [])
    return ScriptRun(
        outcome=cast(wire.ScriptOutcome, outcome),
        exception=_text(raw.get("exception"), 60),
        message=_text(raw.get("message")),
        line=_int(raw.get("line")),
        reason=_text(raw.get("reason")),
        lines=tuple(n for n in lines if _int(n) is not None)[:50] if isinstance(lines, list) else (),
        elapsed=_seconds(raw.get("elapsed")),
        limit=_seconds(raw.get("limit")),
        output=_text(raw.get("output"), 4000),
        stop=_text(raw.get("stop"), 300),
    )


def _mutant(report: _Builder, probe: _ProbeBuilder, planned: PlannedProbe, record: dict[str, Any]) -> bool:
    """One mutant's outcome: the student's checks on it, and whether the grader's programs tell it apart."""
    name = record.get("mutant")
    if planned.kind != wire.MUTATION or not isinstance(name, str):
        return False
    if name not in (*planned.mutants, wire.CLEAN):
        return False
    if name in probe.mutants:
        report.duplicates += 1
        return True
    raw_script = record.get("script")
    script = _script(raw_script) if isinstance(raw_script, dict) else None
    if script is None:
        return False
    probe.mutants[name] = MutantRecord(script)
    return True

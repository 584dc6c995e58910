"""Read what the sandbox printed: untrusted bytes in, validated typed records out.

Only lines carrying this run's nonce count. JSON is parsed strictly (no NaN or Infinity
constants, bounded size); every record is checked against the plan (known probe ids,
program indices in range); anything else is dropped and counted, never trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .plan import Plan, PlannedProbe

MAX_LINE = 1024 * 1024
MAX_TEXT = 400


@dataclass
class ProbeReport:
    forward: dict[int, dict[str, Any]] = field(default_factory=dict)
    final: dict[int, dict[str, Any]] = field(default_factory=dict)
    errors: dict[int, dict[str, Any]] = field(default_factory=dict)
    mutants: dict[str, dict[str, Any]] = field(default_factory=dict)  # mutation probes, by mutant id
    end: dict[str, Any] | None = None

    def observations(self, index: int) -> dict[str, Any]:
        """Best observations for one program: final, else partial ones from an error or forward."""
        if index in self.final:
            return self.final[index]
        if index in self.errors:
            partial: dict[str, Any] = self.errors[index].get("obs", {})
            return partial
        return self.forward.get(index, {})


@dataclass
class HarnessReport:
    load: dict[str, Any] | None
    probes: dict[str, ProbeReport]
    complete: bool  # the harness reached its end marker
    dropped: int  # lines or records that failed validation
    duplicates: int  # records that repeated one already received

    def probe(self, probe_id: str) -> ProbeReport:
        return self.probes.setdefault(probe_id, ProbeReport())


def _reject(name: str) -> Any:
    raise ValueError(name)


def _clean_value(value: Any) -> tuple[bool, Any]:
    if isinstance(value, bool):
        return True, value
    if isinstance(value, (int, float)):
        try:
            return True, float(value)
        except OverflowError:
            return True, {"nonfinite": "overflow"}
    if isinstance(value, str):
        return True, value[:MAX_TEXT]
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in ("nonfinite", "bad") and isinstance(inner, str):
            return True, {key: inner[:60]}
    if isinstance(value, list) and len(value) <= 512 and all(isinstance(v, str) for v in value):
        return True, [v[:60] for v in value]
    return False, None


def _clean_obs(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or len(raw) > 4096:
        return None
    out: dict[str, Any] = {}
    for key, value in raw.items():
        ok, clean = _clean_value(value)
        if not ok or not isinstance(key, str) or len(key) > 80:
            return None
        out[key] = clean
    return out


def _texts(value: Any, limit: int, count: int) -> list[str]:
    """A list of short strings, or empty: a malformed field never raises."""
    if not isinstance(value, list):
        return []
    return [v[:limit] for v in value if isinstance(v, str)][:count]


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def parse_output(stdout: bytes, *, nonce: str, plan: Plan) -> HarnessReport:
    prefix = f"@@AG:{nonce} ".encode()
    planned = {p.id: p for p in plan.probes}
    report = HarnessReport(load=None, probes={}, complete=False, dropped=0, duplicates=0)
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
        if not isinstance(record, dict) or not _accept(record, report, planned):
            report.dropped += 1
    return report


def _accept(record: dict[str, Any], report: HarnessReport, planned: dict[str, PlannedProbe]) -> bool:
    kind = record.get("t")
    if kind == "end":
        report.complete = True
        return True
    if kind == "load":
        if report.load is not None:
            report.duplicates += 1
            return True
        if any(not isinstance(record.get(k, []), list) for k in ("extra_args", "stand_ins_used", "notices")):
            return False
        report.load = {
            "ok": record.get("ok") is True,
            "mode": _text(record.get("mode"), 20),
            "class_name": _text(record.get("class_name"), 60),
            "extra_args": _texts(record.get("extra_args"), 40, 8),
            "stand_ins_used": _texts(record.get("stand_ins_used"), 60, 10),
            "notices": _texts(record.get("notices"), MAX_TEXT, 12),
            "error": _error(record.get("error")),
            "output": _text(record.get("output"), 64 * 1024),
            "output_limit": record.get("output_limit") is True,
            "timed_out": record.get("timed_out") is True,
            "memory_error": record.get("memory_error") is True,
        }
        return True
    probe_id = record.get("probe")
    if not isinstance(probe_id, str) or probe_id not in planned:
        return False
    probe = report.probe(probe_id)
    count = len(planned[probe_id].programs)
    if kind in ("obs", "err"):
        index = record.get("program")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < max(count, 1):
            return False
        obs = _clean_obs(record.get("obs", {}))
        if obs is None:
            return False
        if kind == "err":
            target = probe.errors
            value: dict[str, Any] = {
                "stage": _text(record.get("stage"), 200),
                "error": _error(record.get("error")),
                "obs": obs,
            }
        else:
            phase = record.get("phase")
            if phase not in ("forward", "final"):
                return False
            target = probe.forward if phase == "forward" else probe.final
            value = obs
        if index in target:
            report.duplicates += 1
            return True
        target[index] = value
        return True
    if kind == "mutant":
        return _mutant(report, probe, planned[probe_id], record)
    if kind == "probe_end":
        if probe.end is not None:
            report.duplicates += 1
            return True
        status = record.get("status")
        if status not in ("ok", "exited", "killed", "timeout", "deadline", "output_limit", "record_limit", "not_run"):
            return False
        probe.end = {
            "status": status,
            "reason": _text(record.get("reason"), 40),
            "signal": _text(record.get("signal"), 20),
            "exit_code": record.get("exit_code") if isinstance(record.get("exit_code"), int) else None,
            "output": _text(record.get("output"), 64 * 1024),
            "output_truncated": record.get("output_truncated") is True,
            "lingering": record.get("lingering") is True,
            "elapsed": float(record["elapsed"])
            if isinstance(record.get("elapsed"), (int, float)) and not isinstance(record.get("elapsed"), bool)
            else 0.0,
        }
        return True
    return False


SCRIPT_OUTCOMES = ("passed", "failed", "crashed", "timeout", "not_applicable", "not_run")
ORACLE_STATUSES = (
    "ok",
    "timeout",
    "deadline",
    "killed",
    "exited",
    "output_limit",
    "record_limit",
    "no_baseline",
    "error",
)


def _mutant(report: HarnessReport, probe: ProbeReport, plan_probe: PlannedProbe, record: dict[str, Any]) -> bool:
    """One mutant's outcome: the student's checks on it, and whether the grader's programs tell it apart."""
    name = record.get("mutant")
    if plan_probe.kind != "mutation" or not isinstance(name, str):
        return False
    if name not in (*plan_probe.mutants, "clean", "equivalent"):
        return False
    if name in probe.mutants:
        report.duplicates += 1
        return True
    value: dict[str, Any] = {}
    script = record.get("script")
    if isinstance(script, dict):
        if script.get("outcome") not in SCRIPT_OUTCOMES:
            return False
        lines = script.get("lines", [])
        value["script"] = {
            "outcome": script["outcome"],
            "exception": _text(script.get("exception"), 60),
            "message": _text(script.get("message")),
            "line": _int(script.get("line")),
            "reason": _text(script.get("reason")),
            "lines": [n for n in lines if _int(n) is not None][:50] if isinstance(lines, list) else [],
            "elapsed": _seconds(script.get("elapsed")),
            "limit": _seconds(script.get("limit")),
            "output": _text(script.get("output"), 4000),
        }
    oracle = record.get("oracle")
    if isinstance(oracle, dict):
        differs = oracle.get("differs", [])
        if oracle.get("status") not in ORACLE_STATUSES or not isinstance(differs, list):
            return False
        value["oracle"] = {
            "status": oracle["status"],
            "differs": sorted({d for d in differs if isinstance(d, str) and d in plan_probe.oracle}),
        }
    if not value:
        return False
    probe.mutants[name] = value
    return True


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
        return float(value)
    return 0.0


def _error(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    line = raw.get("line")
    return {
        "type": _text(raw.get("type"), 60),
        "message": _text(raw.get("message")),
        "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
    }

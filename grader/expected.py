"""Expected observations, computed on the host from trusted code only.

The reference solution runs in-process here: it is the instructor's code, and the same
executors the sandbox uses (``sandbox.harness.programs``) observe it, so both sides read
values identically. Float-math expectations come from ``grader.program``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from sandbox.harness import programs as executors

from .errors import GraderError
from .plan import Plan
from .program import math_expectation
from .protocol import HarnessReport

REFERENCE = Path(__file__).resolve().parent.parent / "reference" / "autograd_lab.py"

Observations = dict[str, Any]


@dataclass(frozen=True)
class Expected:
    """Reference observations per probe, one dict per program (the api probe has one)."""

    by_probe: dict[str, list[Observations]]

    def program(self, probe_id: str, index: int) -> Observations:
        return self.by_probe[probe_id][index]


@lru_cache(maxsize=4)
def load_reference(path: Path = REFERENCE) -> ModuleType:
    spec = importlib.util.spec_from_file_location("grader_reference_engine", path)
    if spec is None or spec.loader is None:
        raise GraderError(f"cannot load the reference solution at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _noop(_phase: str, _obs: Observations) -> None:
    return None


def observe(engine: type, plan: Plan) -> HarnessReport:
    """The plan's api and program probes run against a trusted ``engine`` in-process, read by
    the sandbox's own executors, as a harness report (errors recorded, not raised)."""
    report = HarnessReport(
        load={"ok": True, "class_name": engine.__name__, "extra_args": []},
        probes={},
        complete=True,
        dropped=0,
        duplicates=0,
    )
    for probe in plan.probes:
        out = report.probe(probe.id)
        if probe.kind == "api":
            try:
                out.final[0] = executors.run_api(engine, engine)
            except Exception as error:  # a mutant may break the api probe; that is an observation
                out.errors[0] = {"stage": "api", "error": {"type": type(error).__name__}, "obs": {}}
        for index, program in enumerate(probe.programs):
            try:
                out.final[index] = executors.run_program(engine, program, _noop)
            except executors.ProgramError as failure:
                out.errors[index] = {
                    "stage": failure.stage,
                    "error": {"type": type(failure.error).__name__, "message": str(failure.error)[:200], "line": None},
                    "obs": failure.observations,
                }
        out.end = {"status": "ok", "output": ""}
    return report


def compute_expected(plan: Plan, *, class_name: str, reference: Path = REFERENCE) -> Expected:
    report = observe(getattr(load_reference(reference), class_name), plan)
    by_probe: dict[str, list[Observations]] = {}
    for probe in plan.probes:
        if probe.kind not in ("api", "program"):
            continue
        got = report.probe(probe.id)
        if got.errors:
            failure = next(iter(got.errors.values()))
            raise GraderError(
                f"the reference fails probe {probe.id} at {failure['stage']}: {failure['error'].get('type')} "
                f"{failure['error'].get('message', '')}"
            )
        count = 1 if probe.kind == "api" else len(probe.programs)  # the api probe is one observation
        by_probe[probe.id] = [got.final[i] for i in range(count)]
    return Expected(by_probe)


@lru_cache(maxsize=4096)
def _math_cached(key: str) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(math_expectation(json.loads(key)).items()))


def math_expected(program: dict[str, Any]) -> Observations:
    # Cached by the program's canonical JSON: the same FD program recurs across students.
    return dict(_math_cached(json.dumps(program, sort_keys=True)))

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


def compute_expected(plan: Plan, *, class_name: str, reference: Path = REFERENCE) -> Expected:
    module = load_reference(reference)
    engine = getattr(module, class_name)
    by_probe: dict[str, list[Observations]] = {}
    for probe in plan.probes:
        if probe.kind == "api":
            by_probe[probe.id] = [executors.run_api(engine, engine)]
        elif probe.kind == "program":
            try:
                by_probe[probe.id] = [executors.run_program(engine, p, _noop) for p in probe.programs]
            except executors.ProgramError as failure:
                raise GraderError(
                    f"the reference fails probe {probe.id} at {failure.stage}: {failure.error!r}"
                ) from None
    return Expected(by_probe)


@lru_cache(maxsize=4096)
def _math_cached(key: str) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(math_expectation(json.loads(key)).items()))


def math_expected(program: dict[str, Any]) -> Observations:
    # Cached by the program's canonical JSON: the same FD program recurs across students.
    return dict(_math_cached(json.dumps(program, sort_keys=True)))

"""Expected observations, computed on the host from trusted code only.

The reference solution runs in-process here: it is the instructor's code, and the same
executors the sandbox uses (``sandbox.harness.probes.programs``) observe it, typed by the same
reader as the sandbox's records, so both sides hold values of the same types.
Float-math expectations come from ``grader.program``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from sandbox.harness import wire
from sandbox.harness.probes import programs as executors
from sandbox.harness.probes import stable_hash

from ..engines import REFERENCE as REFERENCE_FILE
from ..errors import GraderError
from ..plan import Plan
from ..program import Program, math_expectation
from .parse import observations
from .records import ErrorInfo, LoadRecord, Observations, ProbeEnd, ProbeRecords, ProgramError, SandboxReport

REFERENCE = REFERENCE_FILE  # the oracle: every expected value is computed from it


@dataclass(frozen=True)
class Expected:
    """Reference observations per probe, one mapping per program (the api probe has one)."""

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


def _noop(_phase: str, _obs: object) -> None:
    return None


def _typed(raw: object) -> Observations:
    typed = observations(raw)
    if typed is None:
        raise GraderError("the harness's executors produced an observation the record reader rejects")
    return typed


def observe(engine: type, plan: Plan, *, numbered: bool = False) -> SandboxReport:
    """The plan's api and program probes run against a trusted ``engine`` in-process, read by
    the sandbox's own executors, as a sandbox report (errors recorded, not raised).

    ``numbered``: the engine (a class of its own, the default hash) hashes as the sandbox
    makes student classes hash, numbered afresh per probe, so a mutant whose wrong numbers
    depend on set order shows here the numbers a submission with that bug shows there."""
    probes: dict[str, ProbeRecords] = {}
    for probe in plan.probes:
        if numbered:
            stable_hash.number_hashes(engine, stable_hash.Numbering())
        final: dict[int, Observations] = {}
        errors: dict[int, ProgramError] = {}
        if probe.kind == wire.API:
            try:
                final[0] = _typed(executors.run_api(engine, engine, *(probe.api_inputs or ())))
            except Exception as error:  # a mutant may break the api probe; that is an observation
                errors[0] = ProgramError("api", ErrorInfo(type(error).__name__), {})
        for index, program in enumerate(probe.programs):
            try:
                final[index] = _typed(executors.run_program(engine, program, _noop))
            except executors.ProgramError as failure:
                info = ErrorInfo(type(failure.error).__name__, str(failure.error)[:200])
                errors[index] = ProgramError(failure.stage, info, _typed(failure.observations))
        probes[probe.id] = ProbeRecords(final=final, errors=errors, end=ProbeEnd(status=wire.OK))
    load = LoadRecord(ok=True, class_name=engine.__name__)
    return SandboxReport(load=load, probes=probes, complete=True)


def compute_expected(plan: Plan, *, class_name: str, reference: Path = REFERENCE) -> Expected:
    report = observe(getattr(load_reference(reference), class_name), plan)
    by_probe: dict[str, list[Observations]] = {}
    for probe in plan.probes:
        if probe.kind not in (wire.API, wire.PROGRAM):
            continue
        got = report.probe(probe.id)
        if got.errors:
            failure = next(iter(got.errors.values()))
            info = failure.error or ErrorInfo("")
            raise GraderError(f"the reference fails probe {probe.id} at {failure.stage}: {info.type} {info.message}")
        count = 1 if probe.kind == wire.API else len(probe.programs)  # the api probe is one observation
        by_probe[probe.id] = [got.final[i] for i in range(count)]
    return Expected(by_probe)


@lru_cache(maxsize=4096)
def _math_cached(key: str) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(math_expectation(json.loads(key)).items()))


def math_expected(program: Program) -> dict[str, float]:
    # Cached by the program's canonical JSON: the same FD program recurs across students.
    return dict(_math_cached(json.dumps(program, sort_keys=True)))

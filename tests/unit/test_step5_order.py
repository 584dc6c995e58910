"""The order of Step 5's runs: random, except that checks which never finished on the file itself
try a wheat first, and no chaff once a wheat has not passed (each would cost the whole allowance
for no credit it could earn)."""

from __future__ import annotations

import ast
from typing import Any

from grader.engines import REFERENCE, chaffs, wheats
from grader.mutate import CATALOGUE
from sandbox.harness import wire
from sandbox.harness.execution.clock import Budget
from sandbox.harness.mutation.probe import WHEAT_FAILED, MutationProbe
from sandbox.harness.probes import facts

SOURCE = REFERENCE.read_text(encoding="utf-8")
WHEATS = [w.id for w in wheats()]
ENGINES = {e.id: e.text for e in (*wheats(), *chaffs([op.id for op in CATALOGUE][:12]))}


class _Runs:
    """Every run of the checks ends as ``outcome`` ("timeout" or "passed"); which ran is kept."""

    def __init__(self, outcome: str) -> None:
        self.outcome = outcome
        self.ran: list[str] = []  # the engine of each run, "" for the file itself
        self.budget = Budget(900.0, 3600.0)  # the budget of the supervisor that runs it

    def run(self, task: dict[str, Any], schema: object, *, timeout: float, progress_resets: bool) -> Any:
        text = task["text"]
        self.ran.append(next((name for name, body in ENGINES.items() if body in text), ""))
        if self.outcome == "timeout":
            self.budget.charge(timeout)  # as the harness's runs charge the grading's budget
            return [], {"status": wire.TIMEOUT, "elapsed": timeout}
        return [{"t": "script_end"}], {"status": wire.OK, "exit_code": 0, "output_tail": "", "elapsed": 0.01}


class _Supervisor:
    def __init__(self, runs: _Runs) -> None:
        self.runs = runs
        self.filename = "autograd_lab.py"
        self.source = SOURCE
        self.plan: dict[str, Any] = {"stand_ins": []}
        self.script_seconds = 20.0
        self.budget = runs.budget = Budget(900.0, 3600.0)
        self.reserve = 0.0
        self.engine = facts.engine_facts(ast.parse(SOURCE), "Value")
        self.emitted: dict[str, dict[str, Any]] = {}
        self.clean_runs: dict[str, tuple[dict[str, Any], float]] = {}

    def emit(self, record: dict[str, Any]) -> None:
        if record.get("t") == wire.MUTANT:
            self.emitted[record["mutant"]] = record["script"]


def _probe(outcome: str) -> tuple[_Supervisor, _Runs]:
    runs = _Runs(outcome)
    sup = _Supervisor(runs)
    engines = [{"id": name, "text": text} for name, text in ENGINES.items()]
    MutationProbe(sup, {"id": "mutation", "engines": engines, "wheats": WHEATS}).run()  # type: ignore[arg-type]
    return sup, runs


def test_checks_that_never_finish_run_on_one_wheat_and_no_chaff() -> None:
    first = set()
    for _ in range(8):  # a draw among all 16 would put a chaff first three times in four
        sup, runs = _probe("timeout")
        assert runs.ran[0] == "" and runs.ran[1] in WHEATS and len(runs.ran) == 2
        assert sup.emitted[runs.ran[1]]["outcome"] == wire.TIMEOUT
        left = [name for name in ENGINES if name != runs.ran[1]]
        assert {sup.emitted[name]["message"] for name in left} == {WHEAT_FAILED}
        first.add(runs.ran[1])
    assert len(first) > 1  # which wheat is still drawn (one in 4**7 that eight draws agree)


def test_checks_that_finish_run_on_every_engine_in_a_drawn_order() -> None:
    orders = set()
    for _ in range(4):
        sup, runs = _probe("passed")
        assert runs.ran[0] == "" and sorted(runs.ran[1:]) == sorted(ENGINES)
        assert all(sup.emitted[name]["outcome"] == wire.PASSED for name in ENGINES)
        orders.add(tuple(runs.ran[1:]))
    assert len(orders) > 1  # four draws of 16 engines alike: about one chance in 10**13 per attempt


def test_a_later_part_in_the_same_sandbox_takes_the_files_own_run_and_its_charge() -> None:
    # Parts run one after another in one sandbox (grader/parts.py): the second part's share of
    # Step 5 does not run the file's own checks again, and is charged what that run cost, as a
    # part in a sandbox of its own would have been.
    sup, runs = _probe("timeout")
    first_charge = sup.clean_runs["mutation"][1]
    later = _Supervisor(runs)
    later.clean_runs = sup.clean_runs
    before = len(runs.ran)
    engines = [{"id": name, "text": text} for name, text in ENGINES.items()]
    MutationProbe(later, {"id": "mutation", "engines": engines, "wheats": WHEATS}).run()  # type: ignore[arg-type]
    assert "" not in runs.ran[before:] and runs.ran[before] in WHEATS  # no run of the file itself
    assert first_charge >= 20.0  # its checks ran to their limit on the file itself
    assert later.budget.used() >= first_charge  # charged all the same
    assert later.emitted[wire.CLEAN] == sup.emitted[wire.CLEAN]

"""The bug-injection probe: the student's own checks on the grader's engines (Step 5).

First ``python autograd_lab.py`` on the file as submitted: its output is the student's to read,
and it decides nothing. Then the file with its graded class replaced by each engine of the plan
(``gate``): correct ones (wheats) and ones with a known bug (chaffs), all the same length, in
an order drawn afresh for every run and unknown to student code, each in its own child with its
own empty scratch folder. Only the outcome of a run is reported (passed, failed, did not
finish), and where in the student's own lines a failing run stopped, for the student to read:
no message, exception or output, which is text the checks write and could carry an engine's
code. Which engine is which the host alone decides from the plan's ids.
"""

from __future__ import annotations

import random
import secrets
from typing import TYPE_CHECKING, Any

from .. import wire
from ..execution.child_records import ScriptRecords
from . import gate, scripts

if TYPE_CHECKING:
    from ..supervisor import Supervisor

WHEAT_FAILED = "not tried: your checks fail on one of the grader's correct engines"


class MutationProbe:
    def __init__(self, supervisor: Supervisor, probe: dict[str, Any]) -> None:
        self.sup = supervisor
        self.probe_id = probe["id"]
        engines = probe.get("engines", [])
        self.engines: dict[str, str] = {str(e["id"]): str(e["text"]) for e in engines if isinstance(e, dict)}
        self.wheats = [str(w) for w in probe.get("wheats", []) if str(w) in self.engines]
        self.order = random.Random(secrets.randbits(64))  # never seen by student code
        self.machine_late = False  # a run was refused or cut because the machine, not the file, was slow

    def emit(self, name: str, **fields: Any) -> None:
        self.sup.emit({"t": wire.MUTANT, "probe": self.probe_id, "mutant": name, **fields})

    def end(self, reason: str = "") -> None:
        reason = wire.REASON_MACHINE_LATE if self.machine_late else reason
        record = {"t": wire.PROBE_END, "probe": self.probe_id, "status": wire.OK}
        self.sup.emit({**record, "reason": reason} if reason else record)

    # --- one run of the student's checks --------------------------------------------------------------

    def script(self, text: str, timeout: float, *, clean: bool = False, wheat: bool = False) -> dict[str, Any]:
        task = {
            "kind": "script",
            "filename": self.sup.filename,
            "text": text,
            "stand_ins": self.sup.plan.get("stand_ins", []),
        }
        if not clean:
            task["disk"] = self.sup.source  # the engine's text is compiled, never written
        records, summary = self.sup.runs.run(task, ScriptRecords(), timeout=timeout, progress_resets=False)
        status = summary.get("status")
        out: dict[str, Any]
        if summary.get("reason") == wire.REASON_MACHINE_LATE:
            out = {"outcome": wire.NOT_RUN, "message": "the grading machine was too busy to run this in time"}
            self.machine_late = True
        elif status == wire.NOT_RUN and summary.get("reason") == wire.REASON_NO_PROCESS:
            # The submission's own processes took every process slot: its doing. On a buggy
            # engine that is no catch; on a correct one (or the file itself), a failure.
            failing = clean or wheat
            out = (
                {"outcome": wire.FAILED, "exception": wire.PROCESS_LIMIT_STOP} if failing else {"outcome": wire.PASSED}
            )
            out["message"] = "your code's processes used up the sandbox's process limit"
        elif status == wire.NOT_RUN:
            out = {"outcome": wire.NOT_RUN, "message": wire.BUDGET_RAN_OUT}
        elif not records and status not in (wire.TIMEOUT, wire.DEADLINE):
            # The grader's own set-up never reached student code: never a catch, never a pass.
            out = {"outcome": wire.NOT_RUN, "message": "the grader could not start this run"}
        elif status in (wire.TIMEOUT, wire.DEADLINE):
            out = {"outcome": wire.TIMEOUT if status == wire.TIMEOUT else wire.NOT_RUN, "limit": round(timeout, 2)}
        elif status == wire.OUTPUT_LIMIT:
            out = {"outcome": wire.FAILED, "exception": wire.OUTPUT_LIMIT_STOP, "message": "printed more than 4 MiB"}
        elif status == wire.KILLED:
            out = {"outcome": wire.CRASHED, "message": f"the process died ({summary.get('signal')})"}
        else:
            tail = str(summary.get("output_tail", ""))
            out = scripts.outcome_from(summary.get("exit_code"), tail, self.sup.filename)
            if out["outcome"] == wire.FAILED and not clean:
                # Where it stopped, in the student's own lines; never what the checks printed.
                lines = (self.sup.engine.line, self.sup.engine.end_line)
                stop = scripts.stop_point(tail, self.sup.filename, out, lines, gate.shift(text, self.sup.source))
                out = {"outcome": wire.FAILED, "stop": stop}
        out["elapsed"] = summary.get("elapsed", 0.0)
        if clean:
            out["output"] = str(summary.get("output", ""))[:4000]
        return out

    # --- the probe -----------------------------------------------------------------------------------

    def run(self) -> None:
        earlier = self.sup.clean_runs.get(self.probe_id)
        if earlier is not None:
            # An earlier part in this sandbox ran the file's own checks: the same run, the same
            # charge, as this part's own run would have been (its record is the host's to drop).
            clean, charge = earlier
            self.sup.budget.charge(charge)
        else:
            spent = self.sup.budget.used()
            clean = self.script(self.sup.source, self.sup.script_seconds, clean=True)
            self.sup.clean_runs[self.probe_id] = (clean, self.sup.budget.used() - spent)
        self.emit(wire.CLEAN, script=clean)
        engine = self.sup.engine
        try:
            texts = gate.spliced_all(self.sup.source, self.sup.filename, engine.class_name, engine.line, self.engines)
        except gate.NoGate as why:
            self._none_run(str(why)[:300])
            return
        except Exception as why:  # RecursionError, MemoryError: the file is valid Python all the same
            self._none_run(f"the grader could not put its engines in place of your class ({type(why).__name__})")
            return
        # The checks' time on the file itself sets their limit on every engine; checks that did
        # not finish there get the whole allowance.
        finished = clean["outcome"] in (wire.PASSED, wire.FAILED)
        limit = (
            min(self.sup.script_seconds, 2.0 + 5.0 * float(clean["elapsed"])) if finished else self.sup.script_seconds
        )
        fit = self._fitting(limit)
        results: dict[str, dict[str, Any]] = {}
        if fit < len(self.wheats):  # without every wheat, no catch can be shown: none runs
            tried: list[str] = []
        else:
            chaffs = [name for name in self.engines if name not in self.wheats]
            tried = self.wheats + chaffs[: fit - len(self.wheats)]
        for name in self.engines:
            if name not in tried:
                results[name] = {"outcome": wire.NOT_RUN, "message": wire.BUDGET_NOT_TRIED}
        if finished:
            self.order.shuffle(tried)
        else:
            # Checks that never finished on the file itself most likely never finish on an engine
            # either: a wheat goes first, and once one fails no chaff is tried (each would cost
            # the whole allowance, for no credit it could earn). The runs stay in a random order
            # within each group.
            wheats, chaffs = tried[: len(self.wheats)], tried[len(self.wheats) :]
            self.order.shuffle(wheats)
            self.order.shuffle(chaffs)
            tried = wheats + chaffs
        for position, name in enumerate(tried):
            wheat = name in self.wheats
            results[name] = self.script(texts[name], limit, wheat=wheat)
            if wheat and results[name]["outcome"] != wire.PASSED:
                # No chaff can count once a correct engine fails the checks: stop here.
                for rest in tried[position + 1 :]:
                    results[rest] = {"outcome": wire.NOT_RUN, "message": WHEAT_FAILED}
                break
        for name in self.engines:
            self.emit(name, script=results[name])
        self.end()

    def _none_run(self, reason: str) -> None:
        for name in self.engines:
            self.emit(name, script={"outcome": wire.NOT_APPLICABLE, "reason": reason})
        self.end(wire.REASON_GATE)

    def _fitting(self, limit: float) -> int:
        """How many runs the budget holds, each at its full limit, the hidden probes' share kept
        back. The wheats come first, then the chaffs in the plan's order, which the assignment's
        seed decides: what runs is settled here, never by how long some run happened to take."""
        room = self.sup.budget.left() - self.sup.reserve
        return max(int(room // max(limit, 0.1)), 0)

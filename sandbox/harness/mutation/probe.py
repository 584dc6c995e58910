"""The bug-injection probe: the student's own checks against copies of their own file.

First the validity gate: ``python autograd_lab.py`` must pass on the file as submitted. Then,
in an order drawn afresh for every run and unknown to student code, several behaviour-
identical copies (``equivalents``: different harmless edits each run) and one mutant per
catalogue bug (``mutate.mutate_text``), every one in its own child with its own empty scratch
folder. Honest checks pass on every copy; checks of the file's text cannot tell a copy from a
mutant by its formatting or by a fixed edit. The host counts every bug that applies (see
``grader.judge.bug_injection``): nothing a mutant does at run time takes it out of the count.
"""

from __future__ import annotations

import random
import secrets
from typing import TYPE_CHECKING, Any

from .. import wire
from ..execution.child_records import ScriptRecords
from ..probes import loader
from . import equivalents, gate, mutate, scripts

if TYPE_CHECKING:
    from ..supervisor import Supervisor

EQUIVALENT_COPIES = 3
BUDGET_WORDS = "not tried: the grading's time budget could not hold every run of your checks at their time limit"


class MutationProbe:
    def __init__(self, supervisor: Supervisor, probe: dict[str, Any]) -> None:
        self.sup = supervisor
        self.probe_id = probe["id"]
        self.mutants: list[str] = list(probe.get("mutants", []))
        self.reference = str(probe.get("reference", ""))
        self.order = random.Random(secrets.randbits(64))  # never seen by student code
        self.machine_late = False  # a run was refused or cut because the machine, not the file, was slow

    def emit(self, name: str, **fields: Any) -> None:
        self.sup.emit({"t": wire.MUTANT, "probe": self.probe_id, "mutant": name, **fields})

    def end(self, reason: str = "") -> None:
        reason = wire.REASON_MACHINE_LATE if self.machine_late else reason
        record = {"t": wire.PROBE_END, "probe": self.probe_id, "status": wire.OK}
        self.sup.emit({**record, "reason": reason} if reason else record)

    # --- one run of the student's checks --------------------------------------------------------------

    def script(self, text: str, timeout: float, *, keep_output: bool = False, mutant: bool = False) -> dict[str, Any]:
        task = {
            "kind": "script",
            "filename": self.sup.filename,
            "text": text,
            "stand_ins": self.sup.plan.get("stand_ins", []),
        }
        records, summary = self.sup.runs.run(task, ScriptRecords(), timeout=timeout, progress_resets=False)
        status = summary.get("status")
        out: dict[str, Any]
        if summary.get("reason") == wire.REASON_MACHINE_LATE:
            out = {"outcome": wire.NOT_RUN, "message": "the grading machine was too busy to run this in time"}
            self.machine_late = True
        elif status == wire.NOT_RUN and summary.get("reason") == wire.REASON_NO_PROCESS:
            # The submission's own processes took every process slot: its doing. A mutant counts
            # as missed; the file itself (or a harmless copy) as failing its checks.
            message = "your code's processes used up the sandbox's process limit"
            out = {"outcome": wire.PASSED} if mutant else {"outcome": wire.FAILED, "exception": wire.PROCESS_LIMIT_STOP}
            out["message"] = message
        elif status == wire.NOT_RUN:
            out = {"outcome": wire.NOT_RUN, "message": "the grading time budget ran out before this run"}
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
            if out["outcome"] == wire.FAILED:
                shift = text.count("\n") - self.sup.source.count("\n")
                lines = (self.sup.engine.line, self.sup.engine.end_line)
                out["stop"] = scripts.stop_point(tail, self.sup.filename, out, lines, shift)
        out["elapsed"] = summary.get("elapsed", 0.0)
        if keep_output:
            out["output"] = str(summary.get("output", ""))[:4000]
        return out

    # --- the probe -----------------------------------------------------------------------------------

    def run(self) -> None:
        clean = self.script(self.sup.source, self.sup.script_seconds, keep_output=True)
        self.emit(wire.CLEAN, script=clean)
        # Checks that fail on the file as submitted may have caught a real bug (the host knows
        # whether the engine is wrong): the copies then show where else they would stop.
        if clean["outcome"] not in (wire.PASSED, wire.FAILED):
            self.end(wire.REASON_GATE)
            return
        limit = min(self.sup.script_seconds, 2.0 + 5.0 * float(clean["elapsed"]))
        texts: dict[str, tuple[str, list[int]]] = {}
        results: dict[str, dict[str, Any]] = {}
        for name in self.mutants:
            try:
                texts[name] = mutate.mutate_text(self.sup.source, name, self.sup.engine.class_name, self.sup.filename)
            except (mutate.NotApplicable, loader.LoadError) as why:
                results[name] = {"outcome": wire.NOT_APPLICABLE, "reason": str(why)[:300]}
            except Exception as why:  # RecursionError, MemoryError: the file is valid Python all the same
                reason = f"the grader could not edit your file ({type(why).__name__})"
                results[name] = {"outcome": wire.NOT_APPLICABLE, "reason": reason}
        copies = self._equivalent_copies()
        correct = self._gate() if clean["outcome"] == wire.FAILED else None
        fit = self._fitting(limit) - (1 if correct else 0)  # the gate's run is held first
        tried = [name for name in self.mutants if name in texts][: max(fit - len(copies), 0)]
        for name in texts:
            if name not in tried:
                results[name] = {"outcome": wire.NOT_RUN, "message": BUDGET_WORDS}
        runs: list[tuple[str, str]] = [(name, texts[name][0]) for name in tried]
        if fit >= len(copies):  # the copies all run, or none does
            runs += [(f"{wire.EQUIVALENT}#{i}", text) for i, text in enumerate(copies)]
        self.order.shuffle(runs)
        for name, text in runs:
            results[name] = self.script(text, limit, mutant=not name.startswith(wire.EQUIVALENT))
        # A copy that did not run is neither a pass nor a fail: no evidence, and no credit
        # without it (the host counts no bug when the gate could not be checked).
        ran = [results.get(f"{wire.EQUIVALENT}#{i}", {"outcome": wire.NOT_RUN}) for i in range(len(copies))]
        failing_copy = next((r for r in ran if r["outcome"] != wire.NOT_RUN and not _same_run(r, clean)), None)
        if not copies:
            self.emit(wire.EQUIVALENT, script={"outcome": wire.NOT_APPLICABLE, "reason": "no harmless edit applies"})
        elif failing_copy is not None:
            self.emit(wire.EQUIVALENT, script=failing_copy)
        elif any(r["outcome"] == wire.NOT_RUN for r in ran):
            self.emit(wire.EQUIVALENT, script={"outcome": wire.NOT_RUN, "message": BUDGET_WORDS})
            self.end(wire.REASON_GATE)
            return
        else:
            self.emit(wire.EQUIVALENT, script=ran[0])
        if failing_copy is not None:
            self.end(wire.REASON_GATE)
            return
        self._report_mutants(texts, results)
        if correct is not None:
            # Last of this probe's runs: what it might leave in counters every run shares, no
            # later run shows (only the hidden probes come after bug injection).
            self.emit(wire.REFERENCE, script=self._gate_run(correct, limit))
        self.end()

    def _gate(self) -> dict[str, Any] | None:
        """The file with the grader's correct class in place of the graded one, or why not."""
        if not self.reference:
            return None
        engine, sup = self.sup.engine, self.sup
        try:
            text = gate.with_reference(sup.source, sup.filename, engine.class_name, engine.line, self.reference)
        except gate.NoGate as why:
            return {"outcome": wire.NOT_APPLICABLE, "reason": str(why)[:300]}
        except Exception as why:  # RecursionError, MemoryError: the file is valid Python all the same
            reason = f"the grader could not edit your file ({type(why).__name__})"
            return {"outcome": wire.NOT_APPLICABLE, "reason": reason}
        return {"text": text}

    def _gate_run(self, gate_text: dict[str, Any], limit: float) -> dict[str, Any]:
        if "text" not in gate_text:
            return gate_text
        if self._fitting(limit) < 1:
            return {"outcome": wire.NOT_RUN, "message": BUDGET_WORDS}
        out = self.script(str(gate_text["text"]), limit)
        # Its outcome only: what the checks print or raise there could carry the correct class's
        # own text, and nothing of it is any student's to see.
        return {"outcome": out["outcome"], "elapsed": out.get("elapsed", 0.0)}

    def _fitting(self, limit: float) -> int:
        """How many runs the budget holds, each at its full limit, the hidden probes' share kept
        back. The copies come first, then the mutants in the plan's order, which the assignment's
        seed decides: what runs is settled here, never by how long some run happened to take."""
        room = self.sup.budget.left() - self.sup.reserve
        return max(int(room // max(limit, 0.1)), 0)

    def _equivalent_copies(self) -> list[str]:
        copies: list[str] = []
        for _ in range(EQUIVALENT_COPIES):
            try:
                text, _ = equivalents.equivalent_text(self.sup.source, self.sup.engine.class_name, self.order)
            except Exception:  # NotApplicable, or the file too deep for the grader's own edits
                continue
            copies.append(text)
        return copies

    def _report_mutants(self, texts: dict[str, tuple[str, list[int]]], results: dict[str, dict[str, Any]]) -> None:
        for name in self.mutants:
            script = results[name]
            if name in texts:
                script["lines"] = texts[name][1][:50]
            self.emit(name, script=script)


def _same_run(copy: dict[str, Any], clean: dict[str, Any]) -> bool:
    """A behaviour-identical copy must do what the file did: pass, or stop at the same place."""
    if clean["outcome"] == wire.PASSED:
        return bool(copy["outcome"] == wire.PASSED)
    return bool(copy["outcome"] == wire.FAILED and copy.get("stop", "") == clean.get("stop", ""))

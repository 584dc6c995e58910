"""The words both sides of the sandbox boundary use: record kinds, end statuses, outcomes.

Standard library only. The in-sandbox harness writes these words and the host's parser
(``grader.judge.records``) accepts only these words, so each is spelled once, here. Nothing
in this module is trusted as a fact about a run: it is a vocabulary, not a validator.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# Every line the host reads starts with this and the run's nonce.
PREFIX: Final = "@@AG:"

# Student code runs as this uid:gid inside the sandbox (the image gives it a passwd entry).
STUDENT_UID: Final = 10002

# Program probes timing out in a row before the rest are skipped.
STALLED_PROBES: Final = 3

# --- record kinds (the "t" field) ----------------------------------------------------------------
# Sent by the harness to the host.
LOAD: Final = "load"
OBS: Final = "obs"
ERR: Final = "err"
MUTANT: Final = "mutant"
PROBE_END: Final = "probe_end"
SHRUNK: Final = "shrunk"  # a smaller program on which the engine is still wrong (counterexample)
END: Final = "end"
RecordKind = Literal["load", "obs", "err", "mutant", "probe_end", "shrunk", "end"]
# Sent by a child to the harness only (summarised before anything reaches the host).
STARTED: Final = "started"  # a script run reached student code (sent just before it runs)
DONE: Final = "done"  # a probe child's last record: the grader's own steps all ran
LOADED: Final = "loaded"  # the file is imported: the probe's own time limit starts now

# --- probe kinds, as the plan names them -----------------------------------------------------------
API: Final = "api"
PROGRAM: Final = "program"
MUTATION: Final = "mutation"
ProbeKind = Literal["api", "program", "mutation"]

# --- observation phases ------------------------------------------------------------------------------
FORWARD: Final = "forward"
FINAL: Final = "final"
Phase = Literal["forward", "final"]

# --- how a probe's child ended (probe_end "status") ------------------------------------------------
OK: Final = "ok"
EXITED: Final = "exited"
KILLED: Final = "killed"
TIMEOUT: Final = "timeout"
DEADLINE: Final = "deadline"  # the whole run's time budget ran out
OUTPUT_LIMIT: Final = "output_limit"
RECORD_LIMIT: Final = "record_limit"
BAD_RECORD: Final = "bad_record"  # the child sent a record outside its schema (reason says which)
NOT_RUN: Final = "not_run"
# The child sent a record the grader's code did not write (an untagged or out-of-step line), or
# ended on its own before its last record: every record of that run is dropped.
FORGED: Final = "forged"
EndStatus = Literal[
    "ok", "exited", "killed", "timeout", "deadline", "output_limit", "record_limit", "bad_record", "not_run", "forged"
]
END_STATUSES: Final = frozenset(get_args(EndStatus))

# Why a probe did not run (probe_end "reason" with status not_run; "gate" ends a mutation probe early).
REASON_DEADLINE: Final = "deadline"  # the grading's budget (charged seconds) ran out: the submission's use
# The machine was too slow to finish within the host's wall-clock limit: the grader's failure,
# never the submission's (a status of deadline or not_run with this reason).
REASON_MACHINE_LATE: Final = "machine_late"
REASON_REPEATED_TIMEOUTS: Final = "repeated_timeouts"
REASON_NO_PROCESS: Final = "no_process"
REASON_LOAD_FAILED: Final = "load_failed"
REASON_UNKNOWN_KIND: Final = "unknown_kind"
REASON_GATE: Final = "gate"
REASON_TOO_DEEP: Final = "too_deep"  # the grader's own work on the file ran out of stack or memory

# --- why the file did not load (a load record's "failure", with "ok" false) ---------------------------
LOAD_UNREADABLE: Final = "unreadable"  # the bytes are not Python text
LOAD_SYNTAX: Final = "syntax"  # Python cannot parse the text
LOAD_IMPORT: Final = "import"  # importing it never bound the engine class, even with top-level code skipped
LOAD_NO_ENGINE: Final = "no_engine"  # it parses, but holds no engine class to grade
LOAD_TOO_DEEP: Final = "too_deep"  # the grader's own reading of its structure ran out of stack or memory
LoadFailure = Literal["unreadable", "syntax", "import", "no_engine", "too_deep"]
LOAD_FAILURES: Final = frozenset(get_args(LoadFailure))

# --- one run of the student's own checks (mutant "script" outcome) --------------------------------
PASSED: Final = "passed"
FAILED: Final = "failed"
CRASHED: Final = "crashed"
NOT_APPLICABLE: Final = "not_applicable"
ScriptOutcome = Literal["passed", "failed", "crashed", "timeout", "not_applicable", "not_run"]
SCRIPT_OUTCOMES: Final = frozenset(get_args(ScriptOutcome))

# A failed run the sandbox stopped, not the checks: never a caught bug.
OUTPUT_LIMIT_STOP: Final = "OutputLimit"
PROCESS_LIMIT_STOP: Final = "ProcessLimit"
SANDBOX_STOPS: Final = (OUTPUT_LIMIT_STOP, PROCESS_LIMIT_STOP)
# Runs that are not catalogue bugs: the file as submitted (its output shown, deciding nothing),
# and the guard operator of a behaviour-identical copy.
CLEAN: Final = "clean"
EQUIVALENT: Final = "equivalent"

# --- values that are not finite floats, as {marker: text} ------------------------------------------
NONFINITE: Final = "nonfinite"  # text: nan, inf, -inf or overflow
BAD: Final = "bad"  # text: the type found instead of a float
UNREAD: Final = "unread"  # text: what the grader could not read (a field the engine lacks)
MARKERS: Final = (NONFINITE, BAD, UNREAD)


# What a run of the student's checks that the budget left out says (the host knows them by these words).
BUDGET_NOT_TRIED: Final = (
    "not tried: the grading's time budget could not hold every run of your checks at their time limit"
)
BUDGET_RAN_OUT: Final = "the grading time budget ran out before this run"

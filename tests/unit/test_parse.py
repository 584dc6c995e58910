"""Parsing what the sandbox printed into typed records: only this run's nonce counts, every record is validated.

The judge tests at the bottom check that a value which survives parsing but is not a finite
float (a bool, a NaN marker, an overflowed number) can never earn points.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from grader.judge.expected import compute_expected
from grader.judge.parse import MAX_LINE, MAX_TEXT, parse_output
from grader.judge.records import ErrorInfo, SandboxReport, Unreadable
from grader.judge.verdicts import judge
from grader.plan import Plan, build_plan
from grader.results import Outcome
from grader.rubric import load_rubric

NONCE = "5f2c0c7e9a1b4d3e8f6a7b8c9d0e1f2a"
PART1_OBS = {"n1.data": 6.0, "n2.data": 7.0, "n3.data": 1.5, "L.data": 10.5}
LOAD = {"t": "load", "ok": True, "mode": "full", "class_name": "Value", "extra_args": [], "notices": []}


@pytest.fixture(scope="module")
def rubric():
    return load_rubric()


@pytest.fixture(scope="module")
def plan(rubric) -> Plan:
    return build_plan(rubric, seed=1, visible_only=False)


def line(record: Any, nonce: str = NONCE) -> bytes:
    return f"@@AG:{nonce} ".encode() + json.dumps(record).encode()


def obs(probe: str, observations: dict[str, Any], program: Any = 0, phase: str = "final") -> dict[str, Any]:
    return {"t": "obs", "probe": probe, "program": program, "phase": phase, "obs": observations}


def parse(plan: Plan, *lines: bytes) -> SandboxReport:
    return parse_output(b"\n".join(lines) + b"\n", nonce=NONCE, plan=plan)


# --- nonce --------------------------------------------------------------------------------


def test_a_valid_run_is_read(plan: Plan) -> None:
    report = parse(
        plan,
        line(LOAD),
        line(obs("part1", PART1_OBS)),
        line({"t": "probe_end", "probe": "part1", "status": "ok", "elapsed": 0.2}),
        line({"t": "end"}),
    )
    assert report.load is not None and report.load.ok is True and report.load.class_name == "Value"
    assert report.probes["part1"].final[0] == PART1_OBS
    assert report.probes["part1"].end is not None and report.probes["part1"].end.status == "ok"
    assert report.complete and report.dropped == 0 and report.duplicates == 0


@pytest.mark.parametrize(
    "forged",
    [
        json.dumps(obs("part1", PART1_OBS)).encode(),  # no prefix at all
        line(obs("part1", PART1_OBS), nonce="0" * 32),  # another run's nonce
        line(obs("part1", PART1_OBS), nonce=NONCE + "0"),  # the nonce as a prefix of a longer one
        line(obs("part1", PART1_OBS), nonce=NONCE[:-1]),  # a truncated nonce
        b" " + line(obs("part1", PART1_OBS)),  # not at the start of the line
        b"@@AG:" + NONCE.encode() + json.dumps(obs("part1", PART1_OBS)).encode(),  # no space after the nonce
        b"print: " + line(obs("part1", PART1_OBS)),
    ],
)
def test_lines_without_this_runs_nonce_are_ignored(plan: Plan, forged: bytes) -> None:
    report = parse(plan, line(LOAD), forged, line({"t": "end"}))
    assert "part1" not in report.probes
    assert report.dropped == 1
    assert report.load is not None and report.complete


def test_forged_end_and_load_without_nonce_do_not_count(plan: Plan) -> None:
    report = parse(plan, json.dumps(LOAD).encode(), b'{"t": "end"}', b'@@AG:x {"t": "end"}')
    assert report.load is None and not report.complete
    assert report.dropped == 3


def test_blank_lines_are_not_counted(plan: Plan) -> None:
    report = parse_output(b"\n\n" + line({"t": "end"}) + b"\n\n", nonce=NONCE, plan=plan)
    assert report.complete and report.dropped == 0


# --- strict JSON --------------------------------------------------------------------------


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_nan_and_infinity_constants_are_rejected(plan: Plan, constant: bytes) -> None:
    body = b'{"t": "obs", "probe": "part1", "program": 0, "phase": "final", "obs": {"L.data": ' + constant + b"}}"
    report = parse(plan, f"@@AG:{NONCE} ".encode() + body)
    assert report.dropped == 1
    assert 0 not in report.probe("part1").final


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe", b"[" * 100000 + b"]" * 100000])
def test_malformed_bodies_are_dropped(plan: Plan, body: bytes) -> None:
    report = parse(plan, f"@@AG:{NONCE} ".encode() + body, line({"t": "end"}))
    assert report.dropped == 1 and report.complete


def test_oversized_lines_are_dropped(plan: Plan) -> None:
    record = obs("part1", PART1_OBS)
    record["pad"] = "x" * MAX_LINE
    assert len(json.dumps(record)) > MAX_LINE
    report = parse(plan, line(record), line({"t": "end"}))
    assert report.dropped == 1
    assert 0 not in report.probe("part1").final


def test_a_line_just_under_the_limit_is_kept(plan: Plan) -> None:
    record = obs("part1", PART1_OBS)
    record["pad"] = ""
    record["pad"] = "x" * (MAX_LINE - len(json.dumps(record)))
    assert len(json.dumps(record)) == MAX_LINE
    report = parse(plan, line(record))
    assert report.probes["part1"].final[0] == PART1_OBS and report.dropped == 0


def test_long_strings_are_capped(plan: Plan) -> None:
    report = parse(plan, line(obs("api", {"construct": "y" * 10_000})))
    assert report.probes["api"].final[0]["construct"] == "y" * MAX_TEXT


# --- records checked against the plan -----------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        obs("no_such_probe", PART1_OBS),
        obs("part1", PART1_OBS, program=1),  # part1 has one program
        obs("part1", PART1_OBS, program=-1),
        obs("part1", PART1_OBS, program=True),  # a bool is not an index
        obs("part1", PART1_OBS, program="0"),
        obs("part1", PART1_OBS, program=0.0),
        obs("part1", PART1_OBS, phase="later"),
        obs("part1", {"L.data": {"nested": {"too": "deep"}}}),
        obs("part1", {"L.data": [1.0, 2.0]}),
        obs("part1", ["not", "a", "mapping"]),  # type: ignore[arg-type]
        {"t": "err", "probe": "part1", "program": 3, "stage": "x", "error": {}},
        {"t": "probe_end", "probe": "part1", "status": "exploded"},
        {"t": "mutant", "probe": "mutation", "mutant": "clean", "script": {"outcome": "maybe"}},
        {"t": "mutant", "probe": "mutation", "mutant": "not_in_plan", "script": {"outcome": "passed"}},
        {"t": "mutant", "probe": "part1", "mutant": "clean", "script": {"outcome": "passed"}},
        {"t": "mutant", "probe": "mutation", "mutant": "acc_add", "oracle": {"status": "ok", "differs": "part1"}},
        {"t": "mutant", "probe": "mutation", "mutant": "acc_add", "script": "passed"},
        {"t": "mutant", "probe": "mutation", "mutant": "acc_add"},
        {"t": "mystery", "probe": "part1"},
        {"probe": "part1"},
    ],
)
def test_records_that_do_not_fit_the_plan_are_dropped(plan: Plan, record: dict[str, Any]) -> None:
    report = parse(plan, line(record))
    assert report.dropped == 1
    if "no_such_probe" not in json.dumps(record):
        part1 = report.probes.get("part1")
        assert part1 is None or (not part1.final and not part1.forward and not part1.errors and part1.end is None)
    assert "no_such_probe" not in report.probes


def test_program_indices_follow_each_probes_program_count(plan: Plan) -> None:
    count = len(plan.probe("fd_add").programs)
    assert count == 16
    report = parse(
        plan,
        line(obs("fd_add", {"x.data": 1.0}, program=count - 1)),
        line(obs("fd_add", {"x.data": 1.0}, program=count)),
    )
    assert list(report.probes["fd_add"].final) == [count - 1]
    assert report.dropped == 1


def test_duplicates_are_counted_and_the_first_is_kept(plan: Plan) -> None:
    report = parse(
        plan,
        line(LOAD),
        line({**LOAD, "class_name": "Impostor"}),
        line(obs("part1", PART1_OBS)),
        line(obs("part1", {**PART1_OBS, "L.data": 99.0})),
        line(obs("part1", {"n1.data": 6.0}, phase="forward")),
        line(obs("part1", {"n1.data": 7.0}, phase="forward")),
        line({"t": "probe_end", "probe": "part1", "status": "ok"}),
        line({"t": "probe_end", "probe": "part1", "status": "timeout"}),
        line({"t": "mutant", "probe": "mutation", "mutant": "clean", "script": {"outcome": "passed"}}),
        line({"t": "mutant", "probe": "mutation", "mutant": "clean", "script": {"outcome": "failed"}}),
    )
    assert report.duplicates == 5 and report.dropped == 0
    assert report.load is not None and report.load.class_name == "Value"
    assert report.probes["part1"].final[0]["L.data"] == 10.5
    assert report.probes["part1"].forward[0] == {"n1.data": 6.0}
    assert report.probes["part1"].end is not None and report.probes["part1"].end.status == "ok"
    clean = report.probes["mutation"].script("clean")
    assert clean is not None and clean.outcome == "passed"


def test_mutant_records_keep_only_well_formed_fields(plan: Plan) -> None:
    record = {
        "t": "mutant",
        "probe": "mutation",
        "mutant": "acc_add",
        "script": {"outcome": "failed", "exception": "AssertionError", "line": 12, "lines": [3, "x", 4]},
        "oracle": {"status": "ok", "differs": ["part1"]},  # no longer read: nothing a run says removes a bug
    }
    report = parse(plan, line(record))
    assert report.dropped == 0
    kept = report.probes["mutation"].mutants["acc_add"]
    assert kept.script is not None
    assert (kept.script.outcome, kept.script.line, kept.script.lines) == ("failed", 12, (3, 4))


def test_observations_fall_back_from_final_to_error_to_forward(plan: Plan) -> None:
    report = parse(
        plan,
        line(obs("part1_random", {"n1.data": 1.0}, program=0, phase="forward")),
        line(
            {
                "t": "err",
                "probe": "part1_random",
                "program": 1,
                "stage": "L.backward()",
                "error": {"type": "KeyError", "line": 12},
                "obs": {"n1.data": 2.0},
            }
        ),
        line(obs("part1_random", {"n1.data": 3.0}, program=2)),
        line(obs("part1_random", {"n1.data": 4.0}, program=2, phase="forward")),
    )
    probe = report.probes["part1_random"]
    assert [probe.observations(i) for i in range(4)] == [{"n1.data": 1.0}, {"n1.data": 2.0}, {"n1.data": 3.0}, {}]
    assert probe.errors[1].error == ErrorInfo("KeyError", "", 12)


def test_values_are_normalised(plan: Plan) -> None:
    report = parse(
        plan,
        line(obs("part1", {"a": 3, "b": True, "c": "op", "d": {"nonfinite": "nan"}, "e": ["x", "y"], "f": 10**400})),
    )
    got = report.probes["part1"].final[0]
    assert got["a"] == 3.0 and type(got["a"]) is float  # ints become floats
    assert got["b"] is True  # a bool stays a bool, it is not 1.0
    assert got["c"] == "op" and got["d"] == Unreadable("nonfinite", "nan") and got["e"] == ("x", "y")
    assert got["f"] == Unreadable("nonfinite", "overflow")


def test_load_fields_are_sanitised(plan: Plan) -> None:
    record = {
        **LOAD,
        "ok": "yes",
        "extra_args": ["label", 5],
        "notices": ["n" * 1000, 7],
        "error": {"type": "X", "line": True},
    }
    report = parse(plan, line(record))
    assert report.load is not None
    assert report.load.ok is False  # only a JSON true counts
    assert report.load.extra_args == ("label",)
    assert report.load.notices == ("n" * MAX_TEXT,)
    assert report.load.error is not None and report.load.error.line is None


@pytest.mark.parametrize(
    ("ok", "failure", "read"),
    [
        (False, "syntax", "syntax"),
        (False, "unreadable", "unreadable"),
        (False, "pickled", None),  # a word the harness does not use
        (True, "syntax", None),  # a load that worked has no failure
    ],
)
def test_why_a_load_failed_is_read_from_its_own_words(plan: Plan, ok: bool, failure: str, read: str | None) -> None:
    # Only the harness's own words, and only on a load that failed.
    report = parse(plan, line({**LOAD, "ok": ok, "failure": failure}))
    assert report.load is not None and report.load.failure == read


@pytest.mark.parametrize("field", ["extra_args", "notices", "stand_ins_used"])
def test_a_malformed_load_record_is_dropped_not_fatal(plan: Plan, field: str) -> None:
    report = parse(plan, line({**LOAD, field: 5}), line({"t": "end"}))
    assert report.complete and report.dropped == 1


# --- the judge never credits a non-float ---------------------------------------------------


def _single(rubric, plan: Plan, check_id: str) -> Plan:
    check = rubric.check(check_id)
    return Plan(seed=plan.seed, probes=(plan.probe(check.probe),), checks=(check,))


@pytest.mark.parametrize(
    ("check_id", "key"),
    [("part1.forward", "L.data"), ("part1.leaf_grads", "a.grad"), ("fd.log_exp", "x.grad")],
)
@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("true", "True"),
        ('{"nonfinite": "nan"}', "NaN"),
        ('{"nonfinite": "inf"}', "inf"),
        ("1e400", "inf"),  # parses as a float infinity, never a finite value
        ('"10.5"', "'10.5'"),
        ('{"bad": "Value"}', "not a float (Value)"),
    ],
)
def test_a_non_float_observation_never_passes(
    rubric, plan: Plan, check_id: str, key: str, raw: str, shown: str
) -> None:
    small = _single(rubric, plan, check_id)
    check = small.checks[0]
    expected = compute_expected(small, class_name="Value")
    good = {k: v for k, v in expected.program(check.probe, 0).items() if isinstance(v, float)}
    assert key in good

    def run(value_json: str) -> Any:
        body = json.dumps(obs(check.probe, good))
        body = body.replace(json.dumps(key) + ": " + json.dumps(good[key]), json.dumps(key) + ": " + value_json)
        assert f'"{key}": {value_json}' in body
        report = parse(small, line(LOAD), f"@@AG:{NONCE} {body}".encode(), line({"t": "end"}))
        (result,) = judge(rubric, small, expected, report)
        return result

    control = run(json.dumps(good[key]))
    assert control.outcome is Outcome.PASSED and control.points == check.points

    result = run(raw)
    assert result.outcome is Outcome.FAILED
    assert result.points == 0
    wrong = [c for c in result.comparisons if not c.ok]
    assert [c.quantity for c in wrong] == [key]
    assert wrong[0].observed == shown


def test_missing_observations_are_explained(rubric, plan: Plan) -> None:
    small = _single(rubric, plan, "part1.leaf_grads")
    expected = compute_expected(small, class_name="Value")
    report = parse(
        small,
        line(LOAD),
        line(obs("part1", PART1_OBS, phase="forward")),
        line({"t": "probe_end", "probe": "part1", "status": "timeout"}),
        line({"t": "end"}),
    )
    (result,) = judge(rubric, small, expected, report)
    assert result.outcome is Outcome.TIMEOUT and result.points == 0
    assert "time limit during backward()" in result.message


def test_nothing_passes_when_the_load_failed(rubric, plan: Plan) -> None:
    small = _single(rubric, plan, "part1.forward")
    expected = compute_expected(small, class_name="Value")
    report = parse(small, line({**LOAD, "ok": False}), line(obs("part1", PART1_OBS)), line({"t": "end"}))
    (result,) = judge(rubric, small, expected, report)
    assert result.outcome is Outcome.NOT_RUN and result.points == 0

"""The rubric loader: the shipped rubric, and strict errors that name file:line:col and key path."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from grader.errors import RubricError
from grader.plan import build_plan
from grader.results import Visibility
from grader.rubric import DEFAULT_RUBRIC, Limits, Tolerance, load_rubric

TAGS = ("api", "part1_trace", "a6_parity", "reuse", "bug_injection", "finite_difference")

# A small rubric that loads; each error case below changes one thing in it.
BASE = """\
assignment:
  name: mini
  file: autograd_lab.py
  class: Value
  total: 10
probes:
  part1:
    kind: program
    leaves: {a: 2, b: 3}
    steps: ["n1 = a * b", "backward(n1)"]
sections:
  - tag: api
    title: API
    checks:
      - id: c1
        title: first
        points: 10
        probe: part1
        compare: values
"""


def write(tmp_path: Path, text: str, name: str = "rubric.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def position(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based (line, column) of the ``occurrence``-th line containing ``needle``, at the needle."""
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number, line.index(needle) + 1
    raise AssertionError(f"{needle!r} not in the YAML")


def load_error(path: Path) -> RubricError:
    with pytest.raises(RubricError) as caught:
        load_rubric(path)
    return caught.value


def replaced(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, f"{old!r} must occur exactly once"
    return text.replace(old, new)


# --- the shipped rubric -------------------------------------------------------------------


@pytest.fixture(scope="module")
def shipped():
    return load_rubric()


def test_shipped_rubric_totals_100_points(shipped) -> None:
    assert shipped.total == 100
    assert sum(c.points for c in shipped.checks) == pytest.approx(100)
    assert sum(s.max_points for s in shipped.sections) == pytest.approx(100)


def test_shipped_rubric_has_the_six_sections_in_order(shipped) -> None:
    assert tuple(s.tag for s in shipped.sections) == TAGS
    assert all(s.checks for s in shipped.sections)
    assert all(c.section == s.tag for s in shipped.sections for c in s.checks)


def test_every_check_names_an_existing_probe_and_tolerance(shipped) -> None:
    for check in shipped.checks:
        assert check.probe in shipped.probes, check.id
        assert check.tolerance in shipped.tolerances, check.id
        for needed in check.requires:
            assert needed in {c.id for c in shipped.checks}


def test_shipped_rubric_details(shipped) -> None:
    assert (shipped.filename, shipped.class_name) == ("autograd_lab.py", "Value")
    assert shipped.path == DEFAULT_RUBRIC
    assert shipped.sha256 == hashlib.sha256(DEFAULT_RUBRIC.read_bytes()).hexdigest()
    assert shipped.limits == Limits()  # the YAML spells out the defaults
    assert shipped.stand_ins == ("graphviz", "matplotlib", "IPython")
    assert shipped.tolerances["step6"] == Tolerance(0.0, 1e-5)
    assert shipped.tolerances["handout"] == Tolerance(1e-9, 0.0)
    ids = [c.id for c in shipped.checks]
    assert len(ids) == len(set(ids))
    assert shipped.check("part1.forward").expect == {"n1.data": 6.0, "n2.data": 7.0, "n3.data": 1.5, "L.data": 10.5}
    assert shipped.check("bug.step5").requires == ("bug.own_checks",)
    assert (shipped.check("bug.step5").compare, shipped.check("bug.step5").mutant) == ("mutant_killed", "acc_mul")
    assert shipped.check("bug.forced_fail").mutant == "forced_fail"
    assert shipped.check("bug.catalogue").requires == ("bug.own_checks", "bug.forced_fail")
    assert shipped.probes["mutation"].kind == "mutation" and shipped.probes["mutation"].mutants == ()
    # Step 5 carries most of the section's points.
    section = next(s for s in shipped.sections if s.tag == "bug_injection")
    assert shipped.check("bug.step5").points > section.max_points / 2
    assert shipped.probes["fd_pow_neg2_5"].exponent == -2.5
    hidden = [c for c in shipped.checks if c.visibility is Visibility.HIDDEN]
    assert hidden and all(shipped.probes[c.probe].randomized for c in hidden)


def test_shipped_rubric_builds_a_plan(shipped) -> None:
    plan = build_plan(shipped, seed=0, visible_only=False)
    fallbacks = {f.probe for c in shipped.checks for f in c.fallbacks}
    assert fallbacks
    assert {p.id for p in plan.probes} == {c.probe for c in shipped.checks} | fallbacks


def test_tolerance_accepts_within_abs_plus_rel() -> None:
    tol = Tolerance(1e-6, 1e-4)
    assert tol.accepts(100.0 + 0.0100009, 100.0)
    assert not tol.accepts(100.0 + 0.0100011, 100.0)
    assert Tolerance(1e-9, 0.0).describe() == "within 1e-09"


# --- error cases --------------------------------------------------------------------------


def test_the_base_rubric_loads(tmp_path: Path) -> None:
    rubric = load_rubric(write(tmp_path, BASE))
    assert rubric.total == 10 and [c.id for c in rubric.checks] == ["c1"]


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    text = replaced("        probe: part1\n", "        prob: part1\n")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "prob: part1")
    assert error.where == f"{path}:{line}:{col}: sections[0].checks[0].prob"
    assert error.message == "unknown key 'prob' (did you mean 'probe'?)"
    assert str(error).startswith(f"{path}:{line}:{col}: ")
    assert line == 18


def test_unknown_top_level_key_is_named(tmp_path: Path) -> None:
    text = BASE + "tolerances:\n  tight: {abs: 1.0e-9}\nsection: []\n"
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "section: []")
    assert error.where == f"{path}:{line}:{col}: section"
    assert "did you mean 'sections'?" in error.message


def test_wrong_type_names_the_key_path(tmp_path: Path) -> None:
    text = replaced("points: 10", "points: ten")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "ten")
    assert (line, col) == (17, 17)
    assert error.where == f"{path}:{line}:{col}: sections[0].checks[0].points"
    assert error.message == "expected a number, got 'ten'"
    assert str(error) == f"{path}:17:17: sections[0].checks[0].points: expected a number, got 'ten'"


def test_boolean_is_not_a_number(tmp_path: Path) -> None:
    text = replaced("total: 10", "total: yes")
    error = load_error(write(tmp_path, text))
    assert error.message == "expected a number, got True"
    assert error.where.endswith(f":{position(text, 'yes')[0]}:10: assignment.total")


def test_unknown_probe_reference(tmp_path: Path) -> None:
    text = replaced("probe: part1", "probe: part2")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "part2")
    assert error.where == f"{path}:{line}:{col}: sections[0].checks[0].probe"
    assert error.message == "no probe named 'part2' (did you mean 'part1'?)"
    assert line == 18


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ('"n1 = a * zz", "backward(n1)"', "'n1 = a * zz': 'zz' is used before it is defined"),
        ('"n1 = = a", "backward(n1)"', "'n1 = = a' is not a step"),
        ('"n1 = a * b", "a = n1 + b"', "'a = n1 + b': 'a' is already defined"),
        ('"n1 = sin(a)"', "'n1 = sin(a)': unsupported operation"),
    ],
)
def test_bad_step_text(tmp_path: Path, steps: str, message: str) -> None:
    text = replaced('["n1 = a * b", "backward(n1)"]', f"[{steps}]")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "steps: [")
    assert error.where == f"{path}:{line}:{col + len('steps: ')}: probes.part1.steps"
    assert error.message == message
    assert line == 10


def test_duplicate_check_id(tmp_path: Path) -> None:
    text = replaced("total: 10", "total: 20") + (
        "      - id: c1\n        title: second\n        points: 10\n        probe: part1\n        compare: values\n"
    )
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "- tag: api")
    assert error.where == f"{path}:{line}:{col}: sections"
    assert error.message == "duplicate check id(s): c1"
    assert line == 12


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    text = replaced("        points: 10\n", "        points: 10\n        points: 10\n")
    path = write(tmp_path, text)
    error = load_error(path)
    assert error.message == "duplicate key"
    assert error.where == f"{path}:{position(text, 'points: 10', 2)[0]}:9: sections[0].checks[0].points"


def test_total_mismatch(tmp_path: Path) -> None:
    text = replaced("total: 10", "total: 12")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "name: mini")
    assert error.where == f"{path}:{line}:{col}: assignment"
    assert error.message == "total is 12 but the checks add up to 10"
    assert line == 2


def test_missing_required_key(tmp_path: Path) -> None:
    text = replaced("        compare: values\n", "")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "id: c1")
    assert error.where == f"{path}:{line}:{col}: sections[0].checks[0]"
    assert error.message == "missing required key(s): compare"
    assert (line, col) == (15, 9)


def test_missing_top_level_section(tmp_path: Path) -> None:
    text = BASE.split("sections:")[0]
    error = load_error(write(tmp_path, text))
    assert error.message == "missing required key(s): sections"
    assert error.where.endswith(":1:1: <top>")


def test_unknown_tolerance_name(tmp_path: Path) -> None:
    text = replaced("        compare: values\n", "        compare: values\n        tolerance: tight\n")
    path = write(tmp_path, text)
    error = load_error(path)
    line, col = position(text, "tight")
    assert error.where == f"{path}:{line}:{col}: sections[0].checks[0].tolerance"
    assert error.message == "no tolerance named 'tight' (have: handout, single_op, composite)"
    assert line == 20


def test_bad_choice_lists_the_options(tmp_path: Path) -> None:
    text = replaced("compare: values", "compare: value")
    error = load_error(write(tmp_path, text))
    assert error.message.startswith("'value' is not one of: engine, api, values")
    assert error.where.endswith(f":{position(text, 'compare: value')[0]}:18: sections[0].checks[0].compare")


def test_requires_an_unknown_check(tmp_path: Path) -> None:
    text = replaced("        compare: values\n", "        compare: values\n        requires: [c9]\n")
    error = load_error(write(tmp_path, text))
    assert error.message == "check c1 depends on unknown check 'c9'"


def test_range_must_be_increasing(tmp_path: Path) -> None:
    text = replaced("leaves: {a: 2, b: 3}", "leaves: {a: [3, -3], b: 3}")
    error = load_error(write(tmp_path, text))
    assert error.message == "a range needs low < high"
    line, col = position(text, "[3, -3]")
    assert error.where.endswith(f":{line}:{col}: probes.part1.leaves.a")
    assert (line, col) == (9, 17)


def test_limits_must_be_positive_whole_numbers(tmp_path: Path) -> None:
    text = BASE + "limits:\n  pids: 0\n"
    error = load_error(write(tmp_path, text))
    assert error.message == "expected a whole number >= 1, got 0"
    assert error.where.endswith(f":{position(text, 'pids: 0')[0]}:9: limits.pids")


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, "assignment: [unclosed\n"))
    assert error.message.startswith("not valid YAML")
    error = load_error(tmp_path / "absent.yaml")
    assert error.message.startswith("cannot read the rubric")
    assert error.where == str(tmp_path / "absent.yaml")


# --- bugs ---------------------------------------------------------------------------------


def test_nan_points_are_rejected(tmp_path: Path) -> None:
    error = load_error(write(tmp_path, replaced("points: 10", "points: .nan")))
    assert error.where.endswith("sections[0].checks[0].points")


def test_empty_leaf_range_is_a_rubric_error(tmp_path: Path) -> None:
    path = write(tmp_path, replaced("leaves: {a: 2, b: 3}", "leaves: {a: [], b: 3}"))
    with pytest.raises(RubricError, match="probes.part1.leaves.a"):
        rubric = load_rubric(path)
        build_plan(rubric, seed=0, visible_only=False)


def test_call_without_argument_is_a_rubric_error(tmp_path: Path) -> None:
    text = replaced('["n1 = a * b", "backward(n1)"]', '["n1 = relu()", "backward(a)"]')
    error = load_error(write(tmp_path, text))
    assert error.where.endswith(":10:12: probes.part1.steps")


# --- the assignment's seed and fallbacks -----------------------------------------------------


def test_the_seed_is_the_rubrics_or_derived_from_the_assignment(tmp_path: Path) -> None:
    derived = load_rubric(write(tmp_path, BASE))
    assert derived.seed == load_rubric(write(tmp_path, BASE, "again.yaml")).seed  # stable, not drawn per load
    renamed = load_rubric(write(tmp_path, replaced("name: mini", "name: other"), "renamed.yaml"))
    assert renamed.seed != derived.seed
    given = load_rubric(write(tmp_path, replaced("  total: 10\n", "  total: 10\n  seed: 1234\n"), "given.yaml"))
    assert given.seed == 1234
    assert load_rubric().seed.bit_length() > 96  # the shipped assignment's: a key, not a counter
    assert derived.seed.bit_length() > 96  # derived (public) seeds are as long, and `validate` warns


def test_reseed_writes_the_seed_and_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    from grader.rubric_seed import reseed

    text = replaced("  total: 10\n", "  total: 10\n  seed: 5   # chosen by staff\n")
    path = write(tmp_path, text)
    old, new = reseed(path, 99)
    assert (old, new) == (5, 99)
    assert path.read_text() == text.replace("seed: 5   # chosen by staff", "seed: 99  # chosen by staff")
    # Without a seed line, one is added to the assignment block; a drawn seed differs.
    bare = write(tmp_path, BASE, "bare.yaml")
    old, new = reseed(bare)
    assert load_rubric(bare).seed == new and "  seed: " in bare.read_text()


def test_a_fallback_must_name_known_probes_and_checks(tmp_path: Path) -> None:
    fallback = "        compare: values\n        fallback: {probe: nope, when_failing: [c1], because: x}\n"
    error = load_error(write(tmp_path, replaced("        compare: values\n", fallback)))
    assert error.message == "no probe named 'nope'"
    fallback = "        compare: values\n        fallback: {probe: part1, when_failing: [c9], because: x}\n"
    error = load_error(write(tmp_path, replaced("        compare: values\n", fallback)))
    assert error.message == "check c1 depends on unknown check 'c9'"


def test_checks_may_not_depend_on_each_other_in_a_circle(tmp_path: Path) -> None:
    fallback = "        compare: values\n        fallback: {probe: part1, when_failing: [c1], because: x}\n"
    error = load_error(write(tmp_path, replaced("        compare: values\n", fallback)))
    assert error.message == "checks depend on each other in a circle: c1 -> c1"


def test_validate_warns_of_a_seed_anyone_could_find(tmp_path: Path) -> None:
    from grader.validate import seed_warnings

    assert seed_warnings(load_rubric()) == []  # the shipped rubric's key is 128 bits
    derived = seed_warnings(load_rubric(write(tmp_path, BASE)))
    assert len(derived) == 1 and "no assignment.seed" in derived[0] and "reseed" in derived[0]
    short = seed_warnings(
        load_rubric(write(tmp_path, replaced("  total: 10\n", "  total: 10\n  seed: 1234\n"), "s.yaml"))
    )
    assert len(short) == 1 and "short (11 bits)" in short[0]

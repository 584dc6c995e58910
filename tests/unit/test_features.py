"""What probes rely on, their forms without it, and who is charged for a missing feature."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import types
from pathlib import Path

import pytest
import yaml

from grader.errors import RubricError
from grader.features import program_features, removable, same_function, simulate, without
from grader.plan import Plan, build_plan
from grader.program import compile_steps
from grader.rubric import DEFAULT_RUBRIC, load_rubric

CASES = Path(__file__).resolve().parents[1] / "cases"
_SPEC = importlib.util.spec_from_file_location("feature_missing", CASES / "feature_missing.py")
assert _SPEC is not None and _SPEC.loader is not None
feature_missing = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(feature_missing)


def program(leaves: dict[str, float], *steps: str) -> dict:
    return {"leaves": leaves, "steps": compile_steps(list(leaves), steps), "record": []}


# --- the rewrite ---------------------------------------------------------------------------------


def test_each_feature_is_found_in_the_step_that_needs_it() -> None:
    p = program(
        {"x": 0.7, "y": 1.3},
        "a = x + 2",
        "b = 0.5 - x",
        "c = a - y",
        "d = -c",
        "e = d / y",
        "f = e ** 2",
        "g = f ** 0.5",
        "L = g * 1.7",
        "backward(L)",
    )
    assert program_features(p) == {"number", "rsub", "sub", "neg", "div", "float_exponent"}
    # 0.5 - x is one call of __rsub__, not a subtraction of the engine's own.
    assert program_features(program({"x": 0.7}, "b = 0.5 - x")) == {"rsub"}
    # A fractional exponent has no int form: that step belongs to the check that measures it.
    assert removable(program({"x": 0.7}, "g = x ** 0.5"), ["float_exponent"]) == frozenset()


def test_the_form_without_every_feature_is_the_same_function_built_from_value_leaves_plus_and_times() -> None:
    p = program(
        {"x": 0.7, "y": 1.3},
        "a = x + 2",
        "b = 0.5 - x",
        "c = a - y",
        "d = -c",
        "e = d / y",
        "f = e ** 2",
        "h = f * b",
        "L = h * 1.7",
        "backward(L)",
    )
    core = without(p, ["number", "rsub", "sub", "neg", "div", "float_exponent"])
    ops = {step[1] for step in core["steps"]}
    assert ops <= {"add", "mul", "pow", "backward"}
    assert all(isinstance(a, str) for step in core["steps"] if step[1] in ("add", "mul") for a in step[2:])
    assert [step[3] for step in core["steps"] if step[1] == "pow"] == [-1, 2]  # int exponents
    assert all(type(step[3]) is int for step in core["steps"] if step[1] == "pow")
    assert same_function(p, core) == ""
    assert set(p["leaves"]) < set(core["leaves"])
    assert {k: core["leaves"][k] for k in p["leaves"]} == p["leaves"]  # the inputs are the original's


def test_a_kept_feature_is_left_as_it_is() -> None:
    p = program({"x": 0.7, "y": 1.3}, "o = x - y", "L = o * 1.7", "backward(L)")
    core = without(p, ["number"])
    assert core["steps"][0] == ["o", "sub", "x", "y"]
    assert core["steps"][1][1:3] == ["mul", "o"] and isinstance(core["steps"][1][3], str)
    reflected = program({"x": 0.7}, "o = 0.7 - x", "L = o * x", "backward(L)")
    assert without(reflected, ["sub", "number"])["steps"] == reflected["steps"]


def test_same_function_finds_a_rewrite_that_computes_something_else() -> None:
    p = program({"x": 0.7, "y": 1.3}, "o = x - y", "L = o * x", "backward(L)")
    wrong = program({"x": 0.7, "y": 1.3}, "o = x + y", "L = o * x", "backward(L)")
    assert "o.data" in same_function(p, wrong)
    # Equal at the planned point only, by accident of the inputs: still another function.
    at_one = program({"x": 2.0}, "o = x * x", "backward(o)")
    doubled = program({"x": 2.0}, "o = x + x", "backward(o)")
    assert same_function(at_one, doubled)


def test_an_sgd_step_reads_the_gradients_of_the_backward_before_it() -> None:
    p = program({"w": 0.5, "x": 2.0}, "y = w * x", "backward(y)", "w2 = sgd(w, 0.1)", "z = w2 * x")
    values = simulate(p)
    assert values["w2.data"] == pytest.approx(0.5 - 0.1 * 2.0)
    assert values["z.grad"] == 0.0


# --- the plan ------------------------------------------------------------------------------------


def test_a_derived_probe_is_its_original_drawn_alike_and_proved_the_same() -> None:
    rubric = load_rubric()
    plan = build_plan(rubric, seed=rubric.seed, visible_only=False)
    derived = [p for p in plan.probes if rubric.probes[p.id].core_of]
    assert {p.id for p in derived} >= {"random_dags~core", "neuron~core", "fd_add~core"}
    for probe in derived:
        original = plan.probe(rubric.probes[probe.id].core_of or "")
        assert len(probe.programs) == len(original.programs)
        for mine, theirs in zip(probe.programs, original.programs, strict=True):
            assert {k: mine["leaves"][k] for k in theirs["leaves"]} == theirs["leaves"]
            assert same_function(theirs, mine) == ""
        assert probe.hidden == original.hidden


def test_a_probe_keeps_what_its_own_check_measures() -> None:
    rubric = load_rubric()
    assert "sub" not in rubric.probes["fd_sub~core"].without
    assert rubric.probes["fd_radd~core"].without == ("number",)
    assert rubric.check("fd.sub").fallback.when_failing == ("api.arithmetic",)  # type: ignore[union-attr]
    assert rubric.check("reuse.random_dags").fallback.when_failing == (  # type: ignore[union-attr]
        "api.arithmetic",
        "fd.neg",
        "fd.sub",
    )
    assert rubric.check("part1.forward").fallback is None  # a * b + c and relu need nothing


# --- the rubric's validation ---------------------------------------------------------------------


def _load_edited(tmp_path: Path, old: str, new: str) -> str:
    text = DEFAULT_RUBRIC.read_text()
    assert old in text
    path = tmp_path / "rubric.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(RubricError) as error:
        load_rubric(path)
    return str(error.value)


def test_an_unknown_feature_or_measuring_check_is_refused(tmp_path: Path) -> None:
    assert "no feature named 'numbr'" in _load_edited(tmp_path, "  number: {measured_by", "  numbr: {measured_by")
    assert "unknown check 'api.nope'" in _load_edited(
        tmp_path, "number: {measured_by: [api.arithmetic]}", "number: {measured_by: [api.nope]}"
    )


def test_a_written_fallback_must_compute_the_same_function(tmp_path: Path) -> None:
    probe = (
        '  reuse_other:\n    kind: program\n    leaves: {x: 3}\n    steps: ["m = x * x", "y = m * x", "backward(y)"]\n'
    )
    text = DEFAULT_RUBRIC.read_text().replace("  reuse_double:\n", probe + "  reuse_double:\n", 1)
    old = "        probe: reuse_square\n        compare: values\n"
    fallback = old + "        fallback: {probe: reuse_other, when_failing: [fd.mul], because: x}\n"
    path = tmp_path / "rubric.yaml"
    path.write_text(text.replace(old, fallback, 1))
    with pytest.raises(RubricError, match="does not compute the same function"):
        load_rubric(path)
    # The same function written another way is accepted.
    path.write_text(text.replace('"y = m * x"', '"y = x + m"').replace(old, fallback, 1))
    assert load_rubric(path).check("reuse.square_plus").fallback.probe == "reuse_other"  # type: ignore[union-attr]


def test_a_written_fallback_of_a_random_graph_is_refused(tmp_path: Path) -> None:
    probe = "  dags_other:\n    kind: random_dag\n    ops: [add, mul]\n"
    text = DEFAULT_RUBRIC.read_text().replace(
        "  mutation: {kind: mutation}\n", probe + "  mutation: {kind: mutation}\n"
    )
    old = "        probe: random_dags\n        compare: values\n"
    path = tmp_path / "rubric.yaml"
    path.write_text(
        text.replace(old, old + "        fallback: {probe: dags_other, when_failing: [fd.sub], because: x}\n")
    )
    with pytest.raises(RubricError, match="declare what they rely on under `features:`"):
        load_rubric(path)


# --- engines that lack one feature are charged only where it is measured --------------------------


DERIVED = sorted(
    (name, yaml.safe_load((CASES / name / "expected.yaml").read_text()))
    for name in (p.name for p in CASES.iterdir() if (p / "expected.yaml").is_file())
    if "derived" in yaml.safe_load((CASES / name / "expected.yaml").read_text())
)


@pytest.fixture(scope="module")
def judged() -> tuple:
    from grader.judge.expected import compute_expected

    rubric = load_rubric()
    plan = build_plan(rubric, seed=rubric.seed, visible_only=False)
    graded = Plan(plan.seed, plan.probes, tuple(c for c in plan.checks if c.section != "bug_injection"))
    return rubric, graded, compute_expected(graded, class_name=rubric.class_name)


def test_there_is_an_engine_for_every_feature_the_rubric_measures() -> None:
    assert {e["derived"] for _, e in DERIVED} == set(load_rubric().features)


@pytest.mark.parametrize(("name", "expected"), DERIVED, ids=[n for n, _ in DERIVED])
def test_an_engine_without_one_feature_loses_only_the_checks_that_measure_it(
    name: str, expected: dict, judged: tuple
) -> None:
    from grader.judge.expected import observe
    from grader.judge.verdicts import judge

    rubric, plan, reference = judged
    module = types.ModuleType("__main__")
    with contextlib.redirect_stdout(io.StringIO()):  # its own checks run, and pass on it
        exec(compile(feature_missing.derive(expected["derived"]), "autograd_lab.py", "exec"), module.__dict__)
    engine = module.Value
    results = judge(rubric, plan, reference, observe(engine, plan, numbered=True))
    failing = sorted(r.check_id for r in results if not r.passed)
    assert failing == sorted(c for c in expected["failing"] if not c.startswith("bug."))
    measuring = set(rubric.features[expected["derived"]]) | {"api.random"}
    assert set(failing) <= measuring
    assert all(r.points == r.max_points for r in results if r.check_id not in measuring)
    # Said once, on a check that measures the feature, when another check was built without it.
    noted = [r.check_id for r in results if any("charged here, once" in n for n in r.notes)]
    assert len(noted) <= 1 and set(noted) <= set(failing)

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
from grader.program import compile_steps, math_expectation
from grader.reuse import copies, original_key, reuses, tree_form
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
    assert program_features(p) == {"number", "rsub", "sub", "neg", "div", "float_exponent", "reuse"}
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


# --- reuse: each further use of a value gets a copy of its own ----------------------------------


def test_without_reuse_each_further_use_of_a_leaf_reads_a_fresh_leaf_of_the_same_value() -> None:
    # fd's accumulation harness: x and y are each used twice.
    p = program({"x": 0.7, "y": -1.3}, "o = x * y", "t = o * x", "L = t * y", "backward(L)")
    assert program_features(p) == {"reuse"} and removable(p, ["reuse"]) == {"reuse"}
    core = without(p, ["reuse"])
    assert core["steps"] == [
        ["o", "mul", "x", "y"],
        ["t", "mul", "o", "x2"],
        ["L", "mul", "t", "y2"],
        ["", "backward", "L"],
    ]
    assert core["leaves"] == {"x": 0.7, "y": -1.3, "x2": 0.7, "y2": -1.3}
    assert copies(core) == {"x2": "x", "y2": "y"} and not reuses(core)
    assert same_function(p, core) == ""
    # Each copy's gradient is its share: the partial along its own use. Together they are x.grad.
    whole, shares = simulate(p), simulate(core)
    assert shares["x.grad"] == pytest.approx(0.7 * -1.3 * -1.3)  # through o only: y * x2 * y2
    assert shares["x2.grad"] == pytest.approx(0.7 * -1.3 * -1.3)  # through t only: o * y2
    assert shares["x.grad"] + shares["x2.grad"] == pytest.approx(whole["x.grad"])
    assert shares["y.grad"] + shares["y2.grad"] == pytest.approx(whole["y.grad"])
    # The FD checks' float math gives each copy its partial too, and the check that observes
    # x.grad observes x2.grad as x's.
    assert math_expectation(core)["x2.grad"] == pytest.approx(shares["x2.grad"], rel=1e-6)
    assert original_key(core, "x2.grad") == "x.grad" and original_key(core, "o.data") == "o.data"


def test_a_node_used_again_is_rebuilt_from_fresh_leaves() -> None:
    p = program({"a": 1.5, "b": -0.5}, "t = a * b", "u = t * t", "L = u + t", "backward(L)")
    core = tree_form(p)
    assert core is not None and not reuses(core)
    built = {s[0]: s[1:] for s in core["steps"] if s[0]}
    assert built["u"] == ["mul", "t", "t2"] and built["t2"] == ["mul", "a2", "b2"]
    assert built["L"] == ["add", "u", "t3"] and built["t3"] == ["mul", "a3", "b3"]
    assert copies(core) == {"t2": "t", "a2": "a", "b2": "b", "t3": "t", "a3": "a", "b3": "b"}
    assert same_function(p, core) == ""
    whole, shares = simulate(p), simulate(core)
    assert sum(shares[f"{n}.grad"] for n in ("t", "t2", "t3")) == pytest.approx(whole["t.grad"])
    assert sum(shares[f"{n}.grad"] for n in ("a", "a2", "a3")) == pytest.approx(whole["a.grad"])


def test_same_function_holds_each_copy_to_the_value_it_copies() -> None:
    p = program({"x": 0.7}, "o = x * x", "backward(o)")
    core = without(p, ["reuse"])
    assert core["steps"][0] == ["o", "mul", "x", "x2"] and same_function(p, core) == ""
    # A constant in place of the copy: another function near the planned point, though equal on it.
    assert same_function(p, {**core, "copies": {}})
    # A copy of another value, or one that names a value the original does not have.
    assert "x2 is" in same_function(p, {**core, "leaves": {"x": 0.7, "x2": 0.8}})
    assert "not a new copy" in same_function(p, {**core, "copies": {"x2": "z"}})
    assert "not a new copy" in same_function(p, {**core, "copies": {"x2": "x", "o": "x"}})
    # A node cut into a leaf of its value: its gradient no longer reaches the leaves above.
    q = program({"x": 0.7}, "t = x * 2", "u = t * t", "backward(u)")
    cut = {
        "leaves": {"x": 0.7, "t2": 1.4},
        "steps": compile_steps(["x", "t2"], ["t = x * 2", "u = t * t2", "backward(u)"]),
        "copies": {"t2": "t"},
    }
    assert same_function(q, cut)


def test_reuse_stays_where_a_copy_would_change_what_is_computed() -> None:
    # An SGD step reads w's whole gradient: with a copy it would read a share.
    sgd = program({"w": 0.5, "x": 2.0}, "y = w * w", "z = y * x", "backward(z)", "w2 = sgd(w, 0.1)")
    assert reuses(sgd) and tree_form(sgd) is None and removable(sgd, ["reuse"]) == frozenset()
    assert without(sgd, ["reuse"])["steps"] == sgd["steps"]
    twice = program({"x": 0.7}, "o = x * x", "backward(o)", "p = o * x", "backward(p)")
    assert tree_form(twice) is None
    # A use no backward() goes through accumulates nothing: the second forward pass of an SGD
    # probe reads x again without reusing it.
    after = program({"w": 0.5, "x": 2.0}, "y = w * x", "backward(y)", "w2 = sgd(w, 0.1)", "z = w2 * x")
    assert not reuses(after) and "reuse" not in program_features(after)


# --- the plan ------------------------------------------------------------------------------------


def test_a_derived_probe_is_its_original_drawn_alike_and_proved_the_same() -> None:
    rubric = load_rubric()
    plan = build_plan(rubric, seed=rubric.seed, visible_only=False)
    derived = [p for p in plan.probes if rubric.probes[p.id].core_of]
    assert {p.id for p in derived} >= {"random_dags~core", "neuron~core", "fd_add~core", "fd_log~tree~core"}
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
    # Reuse is measured by the reuse section and kept in all of it, diamond and random graphs too.
    for check in rubric.section("reuse").checks:
        assert all("reuse" not in rubric.probes[f.probe].without for f in check.fallbacks), check.id


def test_reuse_is_taken_out_only_when_a_check_that_measures_it_fails() -> None:
    rubric = load_rubric()
    accumulation = ("reuse.square_plus", "reuse.square_random", "reuse.double_add", "reuse.double_random")
    fd_log = rubric.check("fd.log")
    # fd.log's own form without a plain number when api.arithmetic fails (log(x) * x kept: it
    # catches log's own `=`); the form with each value used once only when + or * accumulate wrong.
    assert fd_log.fallback is not None and fd_log.apart is not None
    assert (fd_log.fallback.probe, fd_log.fallback.when_failing) == ("fd_log~core", ("api.arithmetic",))
    assert rubric.probes["fd_log~core"].without == ("number",)
    assert (fd_log.apart.probe, fd_log.apart.when_failing) == ("fd_log~tree~core", accumulation)
    assert rubric.probes["fd_log~tree~core"].without == ("number", "reuse")
    assert fd_log.fallbacks == (fd_log.apart, fd_log.fallback)  # tried first
    assert rubric.check("fd.log_exp").fallbacks == ()  # log(exp(x)) uses x once


def test_a_feature_kept_in_an_unknown_section_is_refused(tmp_path: Path) -> None:
    assert "kept_in unknown section 'reus'" in _load_edited(tmp_path, "    kept_in: [reuse]", "    kept_in: [reus]")


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
    fallback = old + "        fallback: {probe: reuse_other, when_failing: [api.arithmetic], because: x}\n"
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
    # Reuse's are cases of their own: `=` in __mul__'s or __add__'s backward (see below).
    assert {e["derived"] for _, e in DERIVED} == set(load_rubric().features) - {"reuse"}


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


def _engine(name: str) -> type:
    module = types.ModuleType(f"case_{name}")  # not __main__: its own checks stay unrun
    source = (CASES / name / "autograd_lab.py").read_text(encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "autograd_lab.py", "exec"), module.__dict__)
    engine: type = module.Value
    return engine


@pytest.mark.parametrize("name", ["mul_assign", "add_assign"])
def test_an_engine_that_assigns_instead_of_accumulating_loses_points_in_reuse_only(name: str, judged: tuple) -> None:
    from grader.judge.expected import observe
    from grader.judge.verdicts import judge, probe_for

    rubric, plan, reference = judged
    engine = _engine(name)
    results = {r.check_id: r for r in judge(rubric, plan, reference, observe(engine, plan, numbered=True))}
    assert {c for c, r in results.items() if not r.passed} <= {c.id for c in rubric.section("reuse").checks}
    assert all(r.points == r.max_points for r in results.values() if r.section == "finite_difference")
    # The finite-difference checks were judged with a copy for each further use, and said so
    # once, on the reuse check that measures it.
    assert probe_for(rubric.check("fd.mul"), results) == "fd_mul~tree~core"
    noted = [c for c, r in results.items() if any("charged here, once" in n for n in r.notes)]
    assert noted == [{"mul_assign": "reuse.square_plus", "add_assign": "reuse.double_add"}[name]]
    assert "a fresh leaf of the same value" in results[noted[0]].notes[-1]


def test_a_copys_share_is_compared_under_its_originals_observed_quantity(judged: tuple) -> None:
    from grader.judge.comparers import Context, values
    from grader.judge.expected import observe

    rubric, plan, reference = judged
    check = rubric.check("fd.mul")  # observes *.data, x.grad, y.grad
    probe = plan.probe("fd_mul~tree~core")
    report = observe(_engine("mul_assign"), plan, numbered=True).probe(probe.id)
    ctx = Context(check, probe, report, reference, rubric.tolerances[check.tolerance], None, rubric.class_name)
    accumulating = next(i for i, p in enumerate(probe.programs) if copies(p))
    verdict = values(ctx, accumulating)
    compared = {c.quantity for c in verdict.comparisons}
    assert {"x.grad", "x2.grad", "y.grad", "y2.grad"} <= compared and verdict.ok
    # The leaf in place of 1.7 in the other harness is a constant of the rewrite, no one's copy.
    scaled = next(i for i, p in enumerate(probe.programs) if not copies(p))
    assert "k" in probe.programs[scaled]["leaves"]
    assert "k.grad" not in {c.quantity for c in values(ctx, scaled).comparisons}


def test_accumulation_in_other_operations_stays_charged_in_finite_differences(judged: tuple) -> None:
    from grader.judge.expected import observe
    from grader.judge.verdicts import judge

    rubric, plan, reference = judged
    for name, failing in (("mut_acc_log", "fd.log"), ("mut_acc_pow", "fd.pow3")):
        results = {r.check_id: r for r in judge(rubric, plan, reference, observe(_engine(name), plan, numbered=True))}
        # log(x) * x catches `=` in log's backward; pow's fails fd.pow_half too, which takes
        # out only float exponents and numbers, so x ** 3 * x still catches it.
        assert not results[failing].passed, name
        assert all(results[c.id].passed for c in rubric.section("reuse").checks), name

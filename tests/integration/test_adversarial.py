"""The adversarial suite: every hostile submission in tests/adversarial/, graded in one batch in
the real Docker sandbox together with a correct canary and every case's honest twin.

Each case's expected.yaml says what its engine earns without the attack (max_score), the
status it must get, a message specific to what it did, and its twin (`twin:`, a file of
tests/adversarial/_twins/, or the reference written at test time): the same engine without the
trick. The test asserts: no hostile submission scores more than its engine earns, neither the
recorded max_score nor its twin's score in this very run; no submission ends as infra_error; the
canary, graded alongside, scores 100; every message is there; no feedback or results file holds a
nonce of the run or a hidden check's input; and nothing is left on the host (containers,
volumes, files, processes).
"""

from __future__ import annotations

import ast
import difflib
import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml
from rubric_variants import with_limits

from grader.batch import STUDENTS_DIR, grade_class
from grader.errors import SandboxUnavailable
from grader.plan import CONSTANT, UPSTREAM, Plan, build_plan
from grader.results import SubmissionResult, Visibility
from grader.rubric import Rubric
from grader.runners.docker import OWNER_LABEL, DockerRunner, owner_id
from grader.store import STORE_NAME, Store

pytestmark = pytest.mark.docker

SEED = 20261130
REQUIRE_DOCKER = os.environ.get("REQUIRE_DOCKER") == "1"
SUITE = Path(__file__).resolve().parents[1] / "adversarial"
TWINS = SUITE / "_twins"
TRICKS = SUITE / "_tricks"
CASES = sorted(p.name for p in SUITE.iterdir() if (p / "expected.yaml").is_file()) if SUITE.is_dir() else []
REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "autograd_lab.py"
# Python 3.11 compiles a 500-term sum in a method (600 it refuses); the harness's own tree work
# on it once recursed past the default limit.
LONG_SUM_TERMS = 500
CANARY = "zz_canary"
# Twins that are exactly the reference are written at test time, never committed: a copy could drift.
GENERATED_TWINS = {"reference.py": REFERENCE}
TWIN_PREFIX = "_twin_"
# Files an escaping submission would leave on the host: the suite's escape cases aim at these.
HOST_MARKERS = (Path("/tmp/pwned"), Path("/tmp/results.json"), Path("/autograder/results/results.json"))
# What a student or an LMS gets per student, and what the class gets: all are searched for leaks.
STUDENT_FILES = ("feedback.html", "feedback.md", "results.json", "prairielearn.json")
CLASS_FILES = ("grades.csv", "index.html")  # (canvas_grades.csv exists only for a Canvas download)
SCORE_EPS = 1e-9  # hostile and twin scores come from the same run and the same arithmetic

# Cases that fail one of the new assertions: a finding about the grader, kept visible as a strict
# xfail (it turns into a failure the moment the grader is fixed, so the mark is removed then).
# Keys: (test, student id). Beware: tests/conftest.py turns a skipped docker test into a failure
# under REQUIRE_DOCKER=1, and pytest reports an xfail as skipped, so there an entry here still fails.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def _expected(name: str) -> dict[str, Any]:
    data = yaml.safe_load((SUITE / name / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data


EXPECTED = {name: _expected(name) for name in CASES}
TWIN_OF = {name: str(data["twin"]) for name, data in EXPECTED.items() if data.get("twin")}
TWIN_FILES = sorted(set(TWIN_OF.values()))


def twin_student(twin: str) -> str:
    return TWIN_PREFIX + Path(twin).stem


TWIN_STUDENTS = [twin_student(t) for t in TWIN_FILES]
STUDENTS = [*CASES, *TWIN_STUDENTS, CANARY]


def params(test: str, names: Iterable[str]) -> list[Any]:
    """Student ids as parameters, each known failure of this test marked strict xfail."""
    out: list[Any] = []
    for name in names:
        reason = KNOWN_FAILURES.get((test, name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(name, id=name, marks=marks))
    return out


def twin_source(twin: str) -> bytes:
    if twin in GENERATED_TWINS:
        return GENERATED_TWINS[twin].read_bytes()
    return (TWINS / twin).read_bytes()


def case_source(name: str) -> bytes:
    """The bytes the batch grades for this case (generated when expected.yaml says so)."""
    kind = EXPECTED[name].get("generate")
    if not kind:
        return (SUITE / name / "autograd_lab.py").read_bytes()
    if kind == "ten_megabytes":
        body = REFERENCE.read_text(encoding="utf-8")
        padding = "# " + "x" * 98 + "\n"
        return (body + padding * (10 * 1024 * 1024 // len(padding))).encode("utf-8")
    if kind == "long_sum_in_init":
        body = REFERENCE.read_text(encoding="utf-8")
        anchor = "        self.data = float(data)\n"
        assert anchor in body, "the reference's __init__ moved: update the long_sum_in_init generator"
        terms = " + ".join(["1"] * LONG_SUM_TERMS)
        return body.replace(anchor, f"        self._terms = {terms}\n" + anchor, 1).encode("utf-8")
    if kind == "forge_trick":
        return forge_trick(str(EXPECTED[name]["trick"]), str(EXPECTED[name]["twin"]))
    if kind == "reference_with_attack":
        return reference_with_attack(name)
    raise AssertionError(f"unknown generator {kind!r}")


ATTACK_RUNS_FIRST = "# --- run first, in main():\n"


def reference_with_attack(name: str) -> bytes:
    """The reference with the case's ``attack.txt``: its definitions just before ``main()`` (after
    a copy of the engine class under the name ``copy_class_as`` gives, if any), and the lines
    after ``ATTACK_RUNS_FIRST`` as the first statements of ``main()``."""
    body = REFERENCE.read_text(encoding="utf-8")
    anchor = "def main() -> None:\n"
    assert body.count(anchor) == 1, "the reference's main() moved: update reference_with_attack"
    definitions, _, first = (SUITE / name / "attack.txt").read_text(encoding="utf-8").partition(ATTACK_RUNS_FIRST)
    kept = EXPECTED[name].get("copy_class_as")
    if kept:
        engine = body[body.index("class Value:") : body.index("# " + "-" * 88 + "\n# The lab's checks")]
        definitions = engine.replace("class Value:", f"class {kept}:", 1) + definitions
    return body.replace(anchor, definitions + anchor + first, 1).encode("utf-8")


def forge_trick(trick: str, twin: str) -> bytes:
    """The broken twin, unchanged, then the reference's engine class renamed ``_Real`` (the twin's
    ``Value`` stays the one graded: the last class of that name), then an import-time trick that
    tries to report what ``_Real`` computes instead."""
    reference = REFERENCE.read_text(encoding="utf-8")
    engine = next(n for n in ast.parse(reference).body if isinstance(n, ast.ClassDef) and n.name == "Value")
    real = "".join(reference.splitlines(keepends=True)[engine.lineno - 1 : engine.end_lineno]).replace("Value", "_Real")
    tricks = [(TRICKS / name).read_text(encoding="utf-8") for name in ("_replay.py", trick)]
    parts = [twin_source(twin).decode("utf-8"), "\n\nimport math\n\n\n", real, "\n\n", *tricks]
    return "".join(parts).encode("utf-8")


def feedback_text(result: SubmissionResult) -> str:
    parts = [result.status_detail, result.load.error, *result.load.notices]
    for check in result.checks:
        parts += [check.message, *check.notes, check.output, *(c.observed for c in check.comparisons)]
    return "\n".join(parts)


def _student_processes() -> list[str]:
    """Processes of the student uid on the host outside every container still running: this
    run's containers are all gone by now (checked first), so those are what our gradings left.
    (The running ones belong to other graders on the engine, such as another test worker.)"""
    live = [c.id for c in docker.from_env().containers.list()]
    found = subprocess.run(["ps", "-eo", "uid,pid,args"], capture_output=True, text=True, check=True).stdout
    left = []
    for line in found.splitlines()[1:]:
        uid, pid = line.split()[:2]
        if uid != "10002":
            continue
        try:
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue  # ended meanwhile
        if not any(container in cgroup for container in live):
            left.append(line)
    return left


# --- leak scanning ---------------------------------------------------------------------------------

# Numbers the feedback prints for reasons of its own, so a hidden input equal to one of them proves
# nothing when it shows up: 0 and +-1 (seeds, relu'(0), exit statuses), the handout's small
# constants (1.0, 2.0, 3.0, 0.5: points, Part 1's and Step 4's inputs, `half` in the neuron
# probes), the programs' fixed multipliers (UPSTREAM 1.7, CONSTANT 0.7). Every number written in a
# visible probe's program (leaves and step constants) is excluded too: visible checks show those by
# design. And any form with fewer than MIN_DIGITS significant digits ("0.25", "12.5", "-2.5") is
# too common in points, tolerances and headings to mean anything. What remains are the random
# hidden inputs: six-decimal draws (formatted with 6 to 7 significant digits), unique per seed.
COMMON_NUMBERS = frozenset({0.0, 1.0, -1.0, 2.0, -2.0, 3.0, 0.5, -0.5, 0.7, 1.7, float(UPSTREAM), float(CONSTANT)})
MIN_DIGITS = 4
MIN_NEEDLES = 250  # seed 20261130: 277 strings from 186 hidden values (repr and :g differ when |v| >= 1)
NONCE_HEX = re.compile(r"^[0-9a-f]{32,}$")
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def forms(value: float) -> set[str]:
    """How a leaf value would be written: the plan's repr and the feedback's two formats."""
    return {repr(value), f"{value:.10g}", f"{value:g}"}


def _numbers(program: dict[str, Any]) -> set[float]:
    values = {float(v) for v in program["leaves"].values()}
    for step in program["steps"]:
        values |= {float(a) for a in step[2:] if isinstance(a, (int, float)) and not isinstance(a, bool)}
    return values


def _digits(text: str) -> int:
    mantissa = text.lower().split("e")[0]
    return len(mantissa.replace("-", "").replace(".", "").lstrip("0"))


@dataclass(frozen=True)
class HiddenInputs:
    needles: frozenset[str]  # the strings searched for
    values: frozenset[float]  # the hidden leaf values they come from
    pattern: re.Pattern[str]


def hidden_inputs(plan: Plan) -> HiddenInputs:
    visible_forms: set[str] = set()
    hidden: set[float] = set()
    for check in plan.checks:
        programs = plan.probe(check.probe).programs
        if check.visibility is Visibility.VISIBLE:
            for program in programs:
                for number in _numbers(program):
                    visible_forms |= forms(number)
        else:
            hidden |= {float(v) for program in programs for v in program["leaves"].values()}
    common = {f for number in COMMON_NUMBERS for f in forms(number)}
    needles = {
        f
        for value in hidden
        for f in forms(value)
        if f not in visible_forms and f not in common and _digits(f) >= MIN_DIGITS
    }
    values = {v for v in hidden if forms(v) & needles}
    # A number on its own: not inside a longer one (2.92738 in 12.927381), sign allowed in front.
    alternatives = "|".join(re.escape(n) for n in sorted(needles, key=len, reverse=True))
    pattern = re.compile(rf"(?<![0-9.])(?:{alternatives})(?![0-9])") if needles else re.compile(r"(?!)")
    return HiddenInputs(frozenset(needles), frozenset(values), pattern)


def readings(path: Path) -> list[str]:
    """The file as written, and as a reader sees it: HTML entities, Markdown escapes, JSON \\u escapes undone."""
    raw = path.read_bytes().decode("utf-8", errors="replace")
    texts = [raw, html.unescape(raw), _MD_ESCAPE.sub(r"\1", html.unescape(raw))]
    if path.suffix == ".json":
        try:
            texts.append(json.dumps(json.loads(raw), ensure_ascii=False))
        except ValueError:
            pass
    return texts


def leaks(path: Path, nonces: Sequence[str], hidden: HiddenInputs) -> list[str]:
    found: set[str] = set()
    for text in readings(path):
        lowered = text.lower()
        found |= {f"nonce {n}" for n in nonces if n.lower() in lowered}
        for match in hidden.pattern.finditer(text):
            context = text[max(0, match.start() - 60) : match.end() + 60].replace("\n", " ")
            found.add(f"hidden input {match.group()} in ...{context}...")
    return sorted(found)


def leak_files(out: Path, student: str) -> list[Path]:
    folder = out / STUDENTS_DIR / student
    return [folder / name for name in STUDENT_FILES if (folder / name).is_file()]


# --- the batch ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    results: dict[str, SubmissionResult]
    out: Path
    nonces: tuple[str, ...]
    sandbox_runs: int  # results that went through the sandbox (they carry evidence)
    with_evidence: frozenset[str]  # their students


def _runner_image() -> str:
    try:
        return DockerRunner().image
    except SandboxUnavailable as error:
        if REQUIRE_DOCKER:
            pytest.fail(f"Docker is unavailable and REQUIRE_DOCKER=1: {error}")
        pytest.skip(f"Docker unavailable: {error}")


@pytest.fixture(scope="module")
def rubric(tmp_path_factory: pytest.TempPathFactory) -> Rubric:
    # A quarter of the shipped time limit for a run of the file's checks (and its import): a
    # hostile loop is stopped and charged the same way at any limit, and the endless ones run to
    # theirs several times per grading (tests/integration/test_cases.py grades honest slow files
    # at the shipped limits). Probes keep theirs: the side-channel cases are measured at it.
    return with_limits(tmp_path_factory.mktemp("rubric"), script_seconds=5)


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory, rubric: Rubric) -> Batch:
    assert len(CASES) >= 50, f"the suite has {len(CASES)} cases"
    assert set(TWIN_OF) == set(CASES), f"cases without a twin: {sorted(set(CASES) - set(TWIN_OF))}"
    image = _runner_image()
    source = tmp_path_factory.mktemp("hostile")
    for name in CASES:
        shutil.copytree(SUITE / name, source / name, ignore=shutil.ignore_patterns("expected.yaml", "attack.txt"))
        if EXPECTED[name].get("generate"):
            (source / name / "autograd_lab.py").write_bytes(case_source(name))
    for twin in TWIN_FILES:
        (source / twin_student(twin)).mkdir()
        (source / twin_student(twin) / "autograd_lab.py").write_bytes(twin_source(twin))
    (source / CANARY).mkdir()
    shutil.copy(REFERENCE, source / CANARY / "autograd_lab.py")
    for marker in HOST_MARKERS:
        assert not marker.exists(), f"{marker} exists before the suite runs"
    out = tmp_path_factory.mktemp("out")
    outcome = grade_class(
        source,
        out=out,
        rubric=rubric,
        runner=DockerRunner(image=image),
        runner_factory=lambda: DockerRunner(image=image),
        jobs=2,
        seed=SEED,
    )
    with Store(out / STORE_NAME) as store:
        evidence = {s.student: s.evidence for s in store.results() if s.evidence is not None}
    return Batch(
        results={r.student: r for r in outcome.results},
        out=out,
        nonces=tuple(sorted({e.nonce for e in evidence.values()})),
        sandbox_runs=len(evidence),
        with_evidence=frozenset(evidence),
    )


@pytest.fixture(scope="module")
def graded(batch: Batch) -> dict[str, SubmissionResult]:
    return batch.results


@pytest.fixture(scope="module")
def hidden(rubric: Rubric) -> HiddenInputs:
    return hidden_inputs(build_plan(rubric, seed=SEED, visible_only=False))


# --- the suite itself, without Docker --------------------------------------------------------------


def test_every_case_names_an_honest_twin() -> None:
    assert not (TWINS / "reference.py").exists(), "reference.py is written at test time; a committed copy could drift"
    for name in CASES:
        twin = EXPECTED[name].get("twin")
        assert twin, f"{name}: expected.yaml names no twin"
        assert twin in GENERATED_TWINS or (TWINS / twin).is_file(), f"{name}: twin {twin} does not exist"
    students = [n.lower() for n in STUDENTS]
    assert len(set(students)) == len(students), "a twin's student id collides with a case"


@pytest.mark.parametrize("name", CASES)
def test_a_case_is_its_twin_plus_the_attack(name: str) -> None:
    """Every line of the twin is in the case, in order: the attack only adds lines, except the
    `twin_edits` lines a trick rewrites (a rename, a removed colon, a NUL byte)."""
    twin = twin_source(TWIN_OF[name]).splitlines(keepends=True)
    case = case_source(name).splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, twin, case, autojunk=False)
    edited = [
        twin[i] for op, i1, i2, _, _ in matcher.get_opcodes() if op in ("replace", "delete") for i in range(i1, i2)
    ]
    allowed = int(EXPECTED[name].get("twin_edits", 0))
    assert len(edited) <= allowed, (
        f"{name} rewrites {len(edited)} lines of {TWIN_OF[name]} (allowed {allowed}): {edited[:5]}"
    )


def test_the_leak_search_is_not_vacuous(hidden: HiddenInputs) -> None:
    assert len(hidden.needles) >= MIN_NEEDLES, len(hidden.needles)
    assert len(hidden.values) >= 150, len(hidden.values)
    assert not {"1", "1.0", "2.0", "0.5", "0.7", "1.7", "-1.0", "3.0"} & hidden.needles


# --- one Docker batch ----------------------------------------------------------------------------------


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
def test_the_canary_graded_alongside_scores_full_marks(graded: dict[str, SubmissionResult]) -> None:
    canary = graded[CANARY]
    assert (canary.score, canary.status.value) == (100.0, "graded"), [c.check_id for c in canary.checks if not c.passed]


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("name", CASES)
def test_hostile_submission(name: str, graded: dict[str, SubmissionResult]) -> None:
    expected = EXPECTED[name]
    result = graded[name]
    assert result.status.value != "infra_error", f"the grader failed: {result.status_detail}"
    assert result.status.value == expected["status"], result.status_detail
    assert result.score <= float(expected["max_score"]) + 0.011, "scored more than its engine earns"
    assert result.score >= float(expected.get("min_score", 0.0)) - 0.011
    text = feedback_text(result)
    assert expected["message"] in text, f"missing {expected['message']!r} in:\n{text[:3000]}"


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("name", params("twin", CASES))
def test_no_better_than_its_honest_twin(name: str, graded: dict[str, SubmissionResult]) -> None:
    result, twin = graded[name], graded[twin_student(TWIN_OF[name])]
    assert twin.status.value == "graded", f"twin {TWIN_OF[name]}: {twin.status.value}: {twin.status_detail}"
    gained = sorted({c.check_id for c in result.checks if c.passed} - {c.check_id for c in twin.checks if c.passed})
    assert result.score <= twin.score + SCORE_EPS, (
        f"{name} scored {result.score} but its twin {TWIN_OF[name]} (the same engine without the attack) "
        f"scored {twin.score} in the same run; passed only by the hostile file: {gained}"
    )


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("student", params("infra", STUDENTS))
def test_no_submission_ends_as_infra_error(student: str, graded: dict[str, SubmissionResult]) -> None:
    result = graded[student]
    assert result.status.value != "infra_error", f"the grader failed on {student}: {result.status_detail}"
    assert result.scored


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
def test_the_nonces_of_the_run_are_known(batch: Batch) -> None:
    assert set(batch.results) == set(STUDENTS)
    # Every submission that ran (it scored, or hit a limit) kept its sandbox evidence, nonce included.
    ran = {s for s, r in batch.results.items() if r.score > 0 or r.status.value in ("timeout", "oom", "output_limit")}
    assert CANARY in ran and len(ran) >= len(STUDENTS) // 2, sorted(ran)
    assert ran <= batch.with_evidence, sorted(ran - batch.with_evidence)
    assert len(batch.nonces) == batch.sandbox_runs, "each sandbox run has a nonce of its own"
    assert all(NONCE_HEX.match(n) for n in batch.nonces), batch.nonces[:3]


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("student", params("leak", STUDENTS))
def test_feedback_holds_no_nonce_and_no_hidden_input(student: str, batch: Batch, hidden: HiddenInputs) -> None:
    files = leak_files(batch.out, student)
    assert {p.name for p in files} >= {"feedback.html", "feedback.md", "results.json"}, files
    found = {p.name: leaks(p, batch.nonces, hidden) for p in files}
    assert not any(found.values()), {k: v[:5] for k, v in found.items() if v}


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("name", params("class-leak", CLASS_FILES))
def test_class_files_hold_no_nonce_and_no_hidden_input(name: str, batch: Batch, hidden: HiddenInputs) -> None:
    path = batch.out / name
    assert path.is_file(), name
    found = leaks(path, batch.nonces, hidden)
    assert not found, found[:5]


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
@pytest.mark.parametrize("student", params("links", STUDENTS))
def test_markdown_feedback_makes_no_link(student: str, batch: Batch) -> None:
    """Rendered as GitHub-flavoured Markdown with autolinks on, feedback.md holds no link at all:
    student text (printed output with URLs and e-mail addresses) stays text."""
    import markdown_it

    path = batch.out / "students" / student / "feedback.md"
    assert path.is_file(), path
    html = markdown_it.MarkdownIt("gfm-like", {"linkify": True}).enable("linkify").render(path.read_text("utf-8"))
    assert "<a " not in html, html[html.find("<a ") - 200 : html.find("<a ") + 200]


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
def test_the_leak_check_catches_a_planted_value(batch: Batch, hidden: HiddenInputs, tmp_path: Path) -> None:
    """A hidden value or a nonce written into a copy of a real feedback file is found, in every form."""
    original = batch.out / STUDENTS_DIR / CANARY
    value = next(v for v in sorted(hidden.values) if v > 0.5 and forms(v) <= hidden.needles)
    plants = [
        ("feedback.html", f"<td>{value:.10g}</td>"),
        ("feedback.html", f"<td>x = {value:g}, y = 1</td>"),
        ("feedback.md", f"| {value!r} |"),
        ("feedback.md", "| " + "".join("\\" + c if c in "-." else c for c in repr(value)) + " |"),  # escaped
        ("results.json", json.dumps({"output": f"x = {value:g}"})[1:-1]),
        ("feedback.md", f"@@AG:{batch.nonces[0]} "),
        ("results.json", batch.nonces[-1].upper()),
    ]
    for index, (name, planted) in enumerate(plants):
        target = tmp_path / f"{index}" / name
        target.parent.mkdir()
        shutil.copy(original / name, target)
        assert leaks(target, batch.nonces, hidden) == [], f"the canary's own {name} is not clean"
        text = target.read_text(encoding="utf-8")
        cut = len(text) // 2
        target.write_text(text[:cut] + planted + text[cut:], encoding="utf-8")
        assert leaks(target, batch.nonces, hidden), f"{planted!r} planted in {name} was not found"
    # Not a false alarm: the same digits inside a longer number are not the hidden value.
    longer = tmp_path / "longer.md"
    longer.write_text(f"1{abs(value)!r}1", encoding="utf-8")
    assert leaks(longer, batch.nonces, hidden) == []


@pytest.mark.slow  # the whole hostile class graded in Docker (minutes)
def test_nothing_is_left_on_the_host(graded: dict[str, SubmissionResult]) -> None:
    client = docker.from_env()
    mine = f"{OWNER_LABEL}={owner_id()}"  # other graders may share the engine
    assert client.containers.list(all=True, filters={"label": mine}) == []
    assert client.volumes.list(filters={"label": mine}) == []
    for marker in HOST_MARKERS:
        assert not marker.exists(), f"a submission wrote {marker} on the host"
    assert _student_processes() == []

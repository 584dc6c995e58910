"""Grade a whole class: collect, decide per student what to do, grade in parallel, store, export.

Per student, against the store under OUT:
- skip: the same submission bytes were graded with the same rubric, image and seed;
- re-judge: only the rubric changed, and not what the sandbox is asked to run (points,
  titles, hints, tolerances): the stored sandbox output is judged again, nothing runs;
- run: everything else (new or changed submission, new image or seed, plan change, --force,
  or a previous infrastructure failure).
Each result is stored and its per-student files written the moment it exists (so a killed
batch loses nothing); the class files (grades.csv, index.html, ...) are written at the end and
by `grader export`, always from the store.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from .errors import SubmissionError
from .intake.collect import Found, collect
from .pipeline import Graded, grade_source, rejudge
from .report import write_feedback_html, write_grades_csv, write_gradescope, write_markdown
from .report.canvas import write_canvas_csv
from .report.class_report import render_class_report
from .report.prairielearn import write_prairielearn
from .report.view import student_files, write_text_atomic
from .results import Status, SubmissionResult
from .rubric import Rubric
from .runners.base import Evidence, Runner
from .similarity.batch import class_section
from .store import STORE_NAME, Store, StoredSubmission

STUDENTS_DIR = "students"
FINAL_PASSES = 1  # whole passes at the end over sandbox failures, on top of the retry inside grade_source

Event = Callable[[str, SubmissionResult], None]  # ("graded" | "rejudged" | "skipped", result)


@dataclass(frozen=True)
class ClassResult:
    results: tuple[SubmissionResult, ...]
    out: Path
    kind: str  # how the submissions came: folders, gradescope, canvas, zip
    ran: int  # went through the sandbox in this run
    rejudged: int
    skipped: int
    warnings: tuple[str, ...]

    @property
    def infra_failures(self) -> int:
        return sum(1 for r in self.results if not r.scored)


def content_sha(found: Found) -> str:
    digest = hashlib.sha256(found.source if found.source is not None else b"")
    digest.update(found.problem.encode())
    return digest.hexdigest()


def runner_identity(runner: Runner) -> str:
    """What the sandbox was: the image tag for Docker, the interpreter for the local runner."""
    return f"{runner.name}:{getattr(runner, 'image', '') or getattr(runner, 'python', '')}"


class _Runners:
    """One runner per worker thread: sandbox clients are not shared across threads."""

    def __init__(self, first: Runner, factory: Callable[[], Runner]) -> None:
        self._local = threading.local()
        self._first: Runner | None = first
        self._factory = factory
        self._lock = threading.Lock()

    def get(self) -> Runner:
        runner: Runner | None = getattr(self._local, "runner", None)
        if runner is None:
            with self._lock:
                runner, self._first = (self._first, None) if self._first is not None else (self._factory(), None)
            self._local.runner = runner
        return runner


def grade_class(
    source: Path,
    *,
    out: Path,
    rubric: Rubric,
    runner: Runner,
    runner_factory: Callable[[], Runner] | None = None,
    jobs: int = 1,
    seed: int | None = None,
    force: bool = False,
    on_event: Event | None = None,
    on_plan: Callable[[int, int], None] | None = None,
) -> ClassResult:
    """Grade every submission in ``source`` (folder or archive) into ``out``.

    ``on_plan(total, to_run)`` is called once the work is known; ``on_event`` per student.
    """
    collection = collect(source, filename=rubric.filename, max_file_bytes=rubric.limits.max_file_kb * 1024)
    if not collection.submissions:
        raise SubmissionError(
            f"{source} holds no submissions (expected {source}/<student>/{rubric.filename}, a Gradescope export, "
            "a Canvas download, or a zip of student folders)"
        )
    out.mkdir(parents=True, exist_ok=True)
    with Store(out / STORE_NAME) as store:
        seed = _seed(store, rubric, seed)
        store.set_meta("kind", collection.kind)
        identity = runner_identity(runner)
        store.forget_missing({f.student for f in collection.submissions})
        todo: list[Found] = []
        done: dict[str, SubmissionResult] = {}
        counts = {"graded": 0, "rejudged": 0, "skipped": 0}
        for found in collection.submissions:
            sha = content_sha(found)
            store.put_submission(
                StoredSubmission(
                    found.student, found.name, sha, found.source, found.origin, found.notices, found.problem
                )
            )
            reused = None if force else _reuse(store, found, sha, rubric, identity, seed)
            if reused is None:
                todo.append(found)
                continue
            kind, result, evidence = reused
            if kind == "rejudged":
                store.put_result(
                    content_sha=sha,
                    rubric_sha=rubric.sha256,
                    image=identity,
                    result=result,
                    evidence=evidence,
                    ran=False,
                )
                _write_student(out, result)
            done[found.student] = result
            counts[kind] += 1
            if on_event:
                on_event(kind, result)
        if on_plan:
            on_plan(len(collection.submissions), len(todo))
        runners = _Runners(runner, runner_factory or (lambda: runner))
        graded = _run_all(todo, runners, rubric, seed, jobs, store, out, identity, on_event)
        retry = [f for f in todo if graded[f.student].status is Status.INFRA_ERROR]
        for _ in range(FINAL_PASSES):
            if retry:
                graded.update(_run_all(retry, runners, rubric, seed, 1, store, out, identity, None))
                retry = [f for f in retry if graded[f.student].status is Status.INFRA_ERROR]
        done.update(graded)
        counts["graded"] = len(todo)
        export_class(
            store,
            out,
            rubric_name=rubric.name,
            section_tags=[s.tag for s in rubric.sections],
            canvas=collection.kind == "canvas",
        )
    results = tuple(done[f.student] for f in collection.submissions)
    return ClassResult(
        results, out, collection.kind, counts["graded"], counts["rejudged"], counts["skipped"], collection.warnings
    )


def _seed(store: Store, rubric: Rubric, seed: int | None) -> int:
    """The batch's seed: the assignment's (the rubric's), unless the instructor gives another on
    purpose. Recorded in the store; a result graded with another seed is regraded."""
    stored = store.meta("seed")
    chosen = seed if seed is not None else rubric.seed
    if stored != str(chosen):
        store.set_meta("seed", str(chosen))
    return chosen


def _reuse(
    store: Store, found: Found, sha: str, rubric: Rubric, identity: str, seed: int
) -> tuple[str, SubmissionResult, Evidence | None] | None:
    """("skipped" | "rejudged", result, evidence) when the stored work still holds, else None."""
    previous = store.result(found.student)
    if previous is None or previous.content_sha != sha or previous.seed != seed or previous.image != identity:
        return None
    if previous.result.status is Status.INFRA_ERROR:
        return None  # never a grade: always tried again
    if previous.rubric_sha == rubric.sha256:
        return "skipped", previous.result, previous.evidence
    if previous.evidence is None or found.source is None:
        return None
    result = rejudge(previous.evidence, found.source, student=found.student, rubric=rubric, seed=seed)
    return None if result is None else ("rejudged", with_intake_notices(result, found), previous.evidence)


def _run_all(
    todo: list[Found],
    runners: _Runners,
    rubric: Rubric,
    seed: int,
    jobs: int,
    store: Store,
    out: Path,
    identity: str,
    on_event: Event | None,
) -> dict[str, SubmissionResult]:
    """Grade in ``jobs`` threads; store and write each result here, in this thread, as it lands."""
    results: dict[str, SubmissionResult] = {}

    def work(found: Found) -> Graded:
        why = found.problem
        return grade_source(
            found.source if not why else None,
            why,
            student=found.student,
            rubric=rubric,
            runner=runners.get(),
            seed=seed,
        )

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grade") as pool:
        futures: dict[Future[Graded], Found] = {pool.submit(work, found): found for found in todo}
        for future in as_completed(futures):
            found = futures[future]
            graded = future.result()
            result = with_intake_notices(graded.result, found)
            store.put_result(
                content_sha=content_sha(found),
                rubric_sha=rubric.sha256,
                image=identity,
                result=result,
                evidence=graded.evidence,
                ran=graded.evidence is not None,
            )
            _write_student(out, result)
            results[found.student] = result
            if on_event:
                on_event("graded", result)
    return results


def with_intake_notices(result: SubmissionResult, found: Found) -> SubmissionResult:
    """What intake had to work around (a misnamed file, several files) goes into the feedback."""
    if not found.notices:
        return result
    notices = tuple(f"Submission: {n}" for n in found.notices) + result.load.notices
    return dataclasses.replace(result, load=dataclasses.replace(result.load, notices=notices))


def student_dir(out: Path, student: str) -> Path:
    return out / STUDENTS_DIR / student


def _write_student(out: Path, result: SubmissionResult) -> None:
    """Every file here is the student's (the store keeps the whole result for staff)."""
    result = student_files(result)
    folder = student_dir(out, result.student)
    folder.mkdir(parents=True, exist_ok=True)
    write_gradescope(result, folder / "results.json")
    write_feedback_html(result, folder / "feedback.html")
    write_markdown(result, folder / "feedback.md")  # for LMS comment boxes
    if not write_prairielearn(result, folder / "prairielearn.json"):
        (folder / "prairielearn.json").unlink(missing_ok=True)  # a grader failure is not a grade


def write_class_index(
    store: Store, out: Path, *, rubric_name: str, results: list[SubmissionResult] | None = None
) -> None:
    """OUT/index.html, with the last similarity report's headline when there is one."""
    if results is None:
        results = [s.result for s in store.results()]
    page = render_class_report(
        results,
        title=f"{rubric_name}: class report",
        feedback_href=lambda s: f"{STUDENTS_DIR}/{s}/feedback.html",
        similarity=class_section(store),
        similarity_hint=f"grader similarity {out}",
    )
    write_text_atomic(out / "index.html", page)


def export_class(store: Store, out: Path, *, rubric_name: str, section_tags: list[str], canvas: bool) -> int:
    """Every class-level and per-student file, from the store alone; returns how many students."""
    stored = store.results()
    names = {s.student: s.name for s in store.submissions()}
    results = [s.result for s in stored]
    for result in results:
        _write_student(out, result)
    write_grades_csv(results, out / "grades.csv", section_tags)
    write_class_index(store, out, rubric_name=rubric_name, results=results)
    if canvas:
        write_canvas_csv(
            [(names.get(r.student, r.student), r.student, r) for r in results], out / "canvas_grades.csv", rubric_name
        )
    return len(results)

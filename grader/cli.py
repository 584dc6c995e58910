"""`grader`: a thin click layer over the Python API. Defaults live in the API, not here."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import click

from .errors import GraderError, InfraError, RubricValidationError, SandboxUnavailable, SubmissionError
from .report import print_summary, write_feedback_html, write_gradescope, write_markdown
from .report.view import printable, student_files
from .results import SubmissionResult
from .rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from .runners.base import Runner

SANDBOXES = ("auto", "docker", "local")


def echo(message: str, *, err: bool = False, one_line: bool = False) -> None:
    """Every line the CLI prints goes through here. Warnings name archive members, folders and files
    from a class download, and messages can quote a submission: an escape sequence in them (ESC, BEL,
    OSC 8 links, C1 controls, bidi overrides) is shown as text, never obeyed by the terminal.
    ``one_line`` also shows newlines and tabs, so a file name cannot start a line of its own."""
    click.echo(printable(message, one_line=one_line), err=err)


def make_runner(kind: str) -> Runner:
    """docker, local, or auto: docker when the engine answers, else local with a warning."""
    if kind in ("docker", "auto"):
        try:
            from .runners.docker import DockerRunner

            return DockerRunner()
        except SandboxUnavailable as error:
            if kind == "docker":
                raise
            echo(f"warning: Docker is not available ({error.message}); falling back to the local runner.", err=True)
    from .runners.local import LocalRunner

    runner = LocalRunner()
    echo(f"warning: {runner.warning}", err=True)
    return runner


def _rubric(path: str | None) -> Rubric:
    return load_rubric(Path(path) if path else DEFAULT_RUBRIC)


rubric_option = click.option(
    "--rubric", "rubric_path", type=click.Path(dir_okay=False), help=f"Rubric YAML [default: {DEFAULT_RUBRIC.name}]"
)
sandbox_option = click.option(
    "--sandbox", type=click.Choice(SANDBOXES), default="auto", show_default=True, help="Where submissions run."
)
seed_option = click.option(
    "--seed",
    type=int,
    help="Draw hidden inputs from this seed instead of the assignment's (the rubric's assignment.seed); "
    "everyone graded with another seed is regraded.",
)


@click.group()
@click.version_option(package_name="autograd-grader")
def cli() -> None:
    """Grade autograd_lab.py submissions in a sandbox, against a YAML rubric."""


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="Write HTML feedback here.")
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write Gradescope results.json here."
)
@click.option(
    "--md",
    "md_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write Markdown feedback here (for LMS comments).",
)
@rubric_option
@sandbox_option
def check(
    file: Path, html_out: Path | None, json_out: Path | None, md_out: Path | None, rubric_path: str | None, sandbox: str
) -> None:
    """Self-check FILE before submitting: visible checks only."""
    from .pipeline import grade_submission

    rubric = _rubric(rubric_path)
    runner = make_runner(sandbox)
    result = grade_submission(
        file, student=file.parent.name or "you", rubric=rubric, runner=runner, seed=rubric.seed, visible_only=True
    )
    print_summary(student_files(result))
    _write(result, html_out, json_out, md_out)
    if not result.scored:
        sys.exit(InfraError.exit_code)  # the summary above already says what failed


@cli.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for the store and reports."
)
@click.option("--jobs", type=click.IntRange(1, 64), help="Submissions graded at once [default: the CPU count].")
@click.option("--force", is_flag=True, help="Regrade everything, even what the store says is up to date.")
@click.option(
    "--warm",
    type=click.IntRange(0, 64),
    help="Docker sandboxes started ahead of need, each used once [default: 0]. Worth it with cores to spare.",
)
@rubric_option
@sandbox_option
@seed_option
def grade(
    source: Path,
    out: Path,
    jobs: int | None,
    force: bool,
    warm: int | None,
    rubric_path: str | None,
    sandbox: str,
    seed: int | None,
) -> None:
    """Grade a class: SOURCE is a folder (SOURCE/<student>/autograd_lab.py), a Gradescope export zip,
    a Canvas submissions download, or a zip of student folders.

    Results go to OUT/grades.sqlite as they finish; a rerun grades only what changed. Writes
    OUT/students/<student>/ (feedback.html, feedback.md, results.json, prairielearn.json), OUT/grades.csv
    and OUT/index.html.
    """
    from rich.console import Console

    from .batch import grade_class
    from .report.batch_view import BatchProgress, summary_table

    rubric = _rubric(rubric_path)
    runner = make_runner("docker" if sandbox == "auto" else sandbox)
    jobs = jobs or os.cpu_count() or 1
    if runner.name == "docker":
        from .runners.docker import DockerRunner, reap_orphans

        # Containers of a grader that was killed (kill -9 skips its cleanup) are removed first.
        reaped = reap_orphans()
        if reaped:
            echo(f"Removed {reaped} sandbox container(s)/volume(s) left by a grader that was killed.")
        if warm and isinstance(runner, DockerRunner):
            from .pipeline import container_limits

            runner.start_warm(warm, expect=container_limits(rubric))
    console = Console(highlight=False)
    echo(f"Grading {source} with {rubric.name} ({runner.name} sandbox, {jobs} at a time)")
    started = time.monotonic()
    try:
        with BatchProgress(console) as progress:
            outcome = grade_class(
                source,
                out=out,
                rubric=rubric,
                runner=runner,
                runner_factory=_runner_factory(runner),
                jobs=jobs,
                seed=seed,
                force=force,
                on_event=progress.event,
                on_plan=progress.plan,
            )
    finally:
        close = getattr(runner, "close", None)
        if callable(close):
            close()  # the warm containers nobody took are removed
    seconds = time.monotonic() - started
    console.print(
        summary_table(
            outcome.results, ran=outcome.ran, rejudged=outcome.rejudged, skipped=outcome.skipped, seconds=seconds
        )
    )
    for warning in outcome.warnings:
        echo(f"warning: {warning}", err=True, one_line=True)
    from .plan import seed_label

    seed_used = outcome.results[0].seed if outcome.results else seed
    named = f" (fingerprint {seed_label(seed_used)})" if seed_used is not None else ""
    whose = "the seed given" if seed is not None else "the assignment's seed"
    echo(f"Graded with {whose}{named}. Wrote {out / 'grades.csv'}, {out / 'index.html'} and per-student reports.")
    if outcome.infra_failures:
        echo(
            f"{outcome.infra_failures} submission(s) failed for infrastructure reasons and were not scored; "
            "run the same command again to retry them.",
            err=True,
        )
        sys.exit(InfraError.exit_code)


@cli.command("export")
@click.argument("out", type=click.Path(file_okay=False, exists=True, path_type=Path))
@rubric_option
def export(out: Path, rubric_path: str | None) -> None:
    """Rewrite every report in OUT from its store, without grading anything."""
    from .batch import export_class
    from .store import STORE_NAME, Store

    rubric = _rubric(rubric_path)
    path = out / STORE_NAME
    if not path.is_file():
        raise click.ClickException(f"{path} does not exist: grade a class into {out} first")
    with Store(path) as store:
        canvas = store.meta("kind") == "canvas"
        count = export_class(
            store, out, rubric_name=rubric.name, section_tags=[s.tag for s in rubric.sections], canvas=canvas
        )
    echo(f"Exported {count} results from {path}.")


@cli.command("similarity")
@click.argument("out", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--base",
    "base_files",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Code every student was given (starter code, the handout's listings); repeatable. "
    "Its matches are not counted. The reference solution always is base code.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="Pairs scoring this or more are listed and grouped.",
)
@rubric_option
def similarity(out: Path, base_files: tuple[Path, ...], threshold: float, rubric_path: str | None) -> None:
    """Compare every pair of submissions graded into OUT: OUT/similarity.json and similarity.html.

    It finds similarity, not misconduct: a person reads the files and decides."""
    if threshold != threshold:  # NaN passes FloatRange
        raise click.BadParameter("must be a number from 0 to 1", param_hint="--threshold")
    from .batch import write_class_index
    from .similarity.batch import class_similarity, read_base
    from .store import STORE_NAME, Store

    rubric = _rubric(rubric_path)
    path = out / STORE_NAME
    if not path.is_file():
        raise click.ClickException(f"{path} does not exist: grade a class into {out} first")
    base = read_base(list(base_files))
    with Store(path) as store:
        report = class_similarity(
            store, out, base=base, threshold=threshold, title=f"{rubric.name}: similarity between submissions"
        )
        write_class_index(store, out, rubric_name=rubric.name)
    groups = f", {len(report.groups)} groups of three or more" if report.groups else ""
    echo(
        f"Compared {len(report.prints)} submissions ({len(report.pairs)} pairs): "
        f"{len(report.flagged)} pairs at {threshold:g} or more{groups}. See {out / 'similarity.html'}."
    )
    for student, why in report.skipped:
        echo(f"not compared: {student}: {why}", err=True, one_line=True)


def _runner_factory(first: Runner) -> Callable[[], Runner]:
    """More runners like ``first``, one per worker thread (the image is already built)."""
    if first.name == "docker":
        from .runners.docker import DockerRunner

        image = str(getattr(first, "image", ""))
        pool = getattr(first, "pool", None)  # one warm pool for every worker thread
        return lambda: DockerRunner(image=image, pool=pool)
    from .runners.local import LocalRunner

    return LocalRunner


@cli.group()
def rubric() -> None:
    """Rubric tools."""


@rubric.command("validate")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@sandbox_option
@seed_option
def rubric_validate(path: str | None, sandbox: str, seed: int | None) -> None:
    """Prove the reference gets full marks and every literal agrees with the reference."""
    from .judge.diagnose import MUTATION_SECTION
    from .plan import seed_label
    from .validate import seed_warnings, validate_rubric

    loaded = _rubric(path)
    echo(
        f"{loaded.path}: loads cleanly, {len(loaded.checks)} checks in {len(loaded.sections)} sections, "
        f"{loaded.total:g} points."
    )
    for warning in seed_warnings(loaded):
        echo(f"warning: {warning}", err=True, one_line=True)
    outcome = validate_rubric(loaded, runner=make_runner(sandbox), seed=loaded.seed if seed is None else seed)
    echo(
        f"Literal values checked against the reference: {outcome.literals_checked}, "
        f"disagreeing: {len(outcome.literal_errors)}"
    )
    for error in outcome.literal_errors:
        echo(f"  {error}")
    ref = outcome.reference_result
    echo(
        f"Reference solution: {ref.score:g}/{ref.max_score:g} "
        f"({ref.status.value}, seed {seed_label(ref.seed)}, {ref.runner})"
    )
    for section in ref.sections:
        echo(f"  {section.tag:20s} {section.points:g}/{section.max_points:g}")
    for failed in [c for c in ref.checks if not c.passed]:
        echo(f"  FAILED {failed.check_id}: {failed.message}")
    matrix = outcome.matrix
    echo("\nWheats: the correct engines students' checks run on (Step 5), graded by the grader's own checks:")
    for wheat_id, title, failing in outcome.wheats:
        verdict = "full marks" if not failing else "FAILS " + ", ".join(failing)
        echo(f"  {wheat_id:32s} {verdict}: {title}")
    echo(
        f"\nKill matrix: the chaffs, each catalogue bug in the reference (rows), against each section (K = caught; "
        f"{MUTATION_SECTION} = the reference's own checks run on that chaff):"
    )
    echo(matrix.render())
    for blind in matrix.blind_spots:
        echo(f"  BLIND SPOT {blind}: no section catches this bug")
    echo(
        f"{len(matrix.rows)} mutants, {len(matrix.blind_spots)} survive every section, "
        f"{len(matrix.not_applicable)} not applicable to the reference."
    )
    if not outcome.ok:
        _fail(RubricValidationError("the rubric is not valid"))
    echo("Rubric is valid.")


@rubric.command("reseed")
@click.argument("path", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option("--seed", type=click.IntRange(0), help="The new seed [default: drawn at random].")
def rubric_reseed(path: str | None, seed: int | None) -> None:
    """Give the assignment a new seed: new hidden inputs for everyone.

    Writes assignment.seed into the rubric file. Every later grading uses it, and `grader grade`
    regrades every submission that was graded with the old one.
    """
    from .rubric_seed import reseed

    try:
        old, new = reseed(Path(path) if path else DEFAULT_RUBRIC, seed)
    except GraderError as error:
        _fail(error)
    from .plan import seed_label

    echo(
        f"Seed {seed_label(old)} -> {seed_label(new)} (fingerprints). "
        "The next `grader grade` regrades every submission with the new hidden inputs."
    )


@cli.group()
def service() -> None:
    """The course service's administration (needs DATABASE_URL, as the service does)."""


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured

    from service.devdb import ClusterError
    from service.serve import adopt_local_service

    try:
        adopt_local_service()  # beside `make serve`: its database and key, unless DATABASE_URL says otherwise
        django.setup()
    except (ImproperlyConfigured, ClusterError) as error:
        _fail(
            InfraError(f"the service is not configured: {error} (set DATABASE_URL and SECRET_KEY as for the service)")
        )


@service.command("roster")
@click.argument("slug")
@click.argument("csv_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
def service_roster(slug: str, csv_file: Path) -> None:
    """Enrol the students of CSV_FILE (username,email,name) in assignment SLUG's course."""
    _django()
    from service.courses.roster import RosterError, enrol_csv

    try:
        outcome = enrol_csv(slug, csv_file.read_text(encoding="utf-8-sig"))
    except (RosterError, UnicodeDecodeError) as error:
        _fail(SubmissionError(f"{csv_file}: {error}"))
    echo(f"{outcome.created} account(s) created, {outcome.enrolled} enrolled, {outcome.already} already enrolled.")


@service.command("token")
@click.argument("usernames", nargs=-1, required=True)
def service_token(usernames: tuple[str, ...]) -> None:
    """Print one `USERNAME TOKEN` line per user: a new API token each (shown only now)."""
    _django()
    from service.courses.roster import RosterError, tokens_for

    try:
        for username, token in tokens_for(list(usernames)):
            echo(f"{username} {token}")
    except RosterError as error:
        _fail(SubmissionError(str(error)))


@service.command("demo")
def service_demo() -> None:
    """Load the demo course (assignment a8) and print its users' new passwords."""
    _django()
    from service.courses.roster import RosterError, load_demo

    try:
        logins = load_demo()
    except RosterError as error:
        _fail(GraderError(f"the demo course was not loaded: {error}"))
    for username, password in logins:
        echo(f"  {username:12s} password {password}")


@service.command("keys")
def service_keys() -> None:
    """Create the tool's LTI signing key, or rotate it (django-lti's rotate_keys: keys older than
    a week leave the JWKS). Print the new key's id."""
    _django()
    from service.accounts.operators import OperatorError, rotate_signing_key

    try:
        kid, retired = rotate_signing_key()
    except OperatorError as error:
        _fail(InfraError(str(error)))
    echo(f"New signing key {kid} (published at /lti/jwks/); {retired} older key(s) retired.")


@service.command("admin")
@click.argument("username")
@click.option("--promote", is_flag=True, help="Make an existing account that is not a site operator into one.")
def service_admin(username: str, promote: bool) -> None:
    """Create site operator USERNAME (the admin's LTI registration pages), or reset its password;
    the new password is printed once."""
    _django()
    from service.accounts.operators import OperatorError, set_operator

    try:
        made, password = set_operator(username, promote=promote)
    except OperatorError as error:
        _fail(SubmissionError(str(error)))
    echo(f"{'Created' if made else 'Reset the password of'} site operator {username}; password (shown once):")
    echo(f"  {password}")


@service.command("lti-registration-url")
@click.option("--hours", type=click.IntRange(1, 24 * 14), default=24, show_default=True, help="how long it stays valid")
def service_lti_registration_url(hours: int) -> None:
    """Print a one-time URL an LMS admin pastes into the LMS to register the grader (LTI Dynamic
    Registration). Only a digest of its code is kept; it works once, within HOURS."""
    _django()
    import getpass

    from service.lti.registering import new_registration_url

    echo(new_registration_url(f"shell:{getpass.getuser()}", hours))


@cli.command("worker")
@click.option("--concurrency", type=click.IntRange(1, 64), default=None, help="sandboxes at once [one per core]")
@click.option("--lanes", default=None, help="comma-separated: self_check,submit,regrade,lms,maintenance [all]")
def worker(concurrency: int | None, lanes: str | None) -> None:
    """Grade the service's queue on this host (needs DATABASE_URL and a Docker engine).

    Builds the sandbox image first if this host lacks it, registers the worker (host, image,
    lanes, heartbeat) and takes jobs until SIGTERM or Ctrl-C, finishing the jobs in hand.
    """
    _django()
    from django.core.management import call_command
    from django.core.management.base import CommandError

    options: dict[str, object] = {}
    if concurrency is not None:
        options["concurrency"] = concurrency
    if lanes is not None:
        options["queues"] = lanes
    try:
        call_command("gradeworker", **options)
    except CommandError as error:
        _fail(InfraError(str(error)))


@cli.group()
def image() -> None:
    """Sandbox image tools."""


@image.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when the inputs have not changed.")
@click.option("--base", help="Base image (default: python:3.11-slim if available, else an offline Debian base).")
def image_build(force: bool, base: str | None) -> None:
    """Build the sandbox image (only when its inputs changed)."""
    from .image import ensure_image

    tag = ensure_image(force=force, base=base, log=lambda line: echo(line, err=True))
    echo(tag)


def _write(result: SubmissionResult, html_out: Path | None, json_out: Path | None, md_out: Path | None) -> None:
    result = student_files(result)  # files a student reads
    if md_out:
        write_markdown(result, md_out)
        echo(f"Markdown feedback: {md_out}")
    if html_out:
        write_feedback_html(result, html_out)
        echo(f"HTML feedback: {html_out}")
    if json_out:
        write_gradescope(result, json_out)
        echo(f"results.json: {json_out}")


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except GraderError as error:
        _fail(error)


def _fail(error: GraderError) -> NoReturn:
    """Every deliberate failure leaves the same way: its message on stderr, its class's exit code."""
    echo(f"error: {error}", err=True)
    sys.exit(error.exit_code)

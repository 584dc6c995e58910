"""`grader`: a thin click layer over the Python API. Defaults live in the API, not here."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .errors import GraderError, SandboxUnavailable
from .plan import new_seed
from .report import print_summary, write_feedback_html, write_gradescope
from .results import SubmissionResult
from .rubric import DEFAULT_RUBRIC, Rubric, load_rubric
from .runners.base import Runner

SANDBOXES = ("auto", "docker", "local")


def make_runner(kind: str) -> Runner:
    """docker, local, or auto: docker when the engine answers, else local with a warning."""
    if kind in ("docker", "auto"):
        try:
            from .runners.docker import DockerRunner

            return DockerRunner()
        except SandboxUnavailable as error:
            if kind == "docker":
                raise
            click.echo(
                f"warning: Docker is not available ({error.message}); falling back to the local runner.", err=True
            )
    from .runners.local import LocalRunner

    runner = LocalRunner()
    click.echo(f"warning: {runner.warning}", err=True)
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
    "--seed", type=int, help="Seed for hidden inputs (recorded in every result) [default: random]."
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
@rubric_option
@sandbox_option
def check(file: Path, html_out: Path | None, json_out: Path | None, rubric_path: str | None, sandbox: str) -> None:
    """Self-check FILE before submitting: visible checks only."""
    from .grading import grade_submission

    rubric = _rubric(rubric_path)
    runner = make_runner(sandbox)
    result = grade_submission(
        file, student=file.parent.name or "you", rubric=rubric, runner=runner, seed=new_seed(), visible_only=True
    )
    print_summary(result)
    _write(result, html_out, json_out)
    if not result.scored:
        sys.exit(7)


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for reports and grades.csv."
)
@rubric_option
@sandbox_option
@seed_option
def grade(folder: Path, out: Path, rubric_path: str | None, sandbox: str, seed: int | None) -> None:
    """Grade every FOLDER/<student>/autograd_lab.py; write OUT/<student>/ reports and OUT/grades.csv."""
    from .batch import grade_class

    rubric = _rubric(rubric_path)
    runner = make_runner("docker" if sandbox == "auto" else sandbox)
    seed = new_seed() if seed is None else seed
    click.echo(f"Grading {folder} with {rubric.name} (seed {seed}, {runner.name} sandbox)")

    def show(result: SubmissionResult) -> None:
        score = f"{result.score:g}/{result.max_score:g}" if result.scored else "  --  "
        click.echo(f"  {result.student:24s} {score:>9s}  {result.status.value:12s} {result.status_detail}")

    outcome = grade_class(folder, out=out, rubric=rubric, runner=runner, seed=seed, on_result=show)
    click.echo(f"Wrote {out / 'grades.csv'} and reports for {len(outcome.results)} submissions.")
    if outcome.infra_failures:
        click.echo(
            f"{outcome.infra_failures} submission(s) failed for infrastructure reasons and were not scored.", err=True
        )
        sys.exit(7)


@cli.group()
def rubric() -> None:
    """Rubric tools."""


@rubric.command("validate")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@sandbox_option
def rubric_validate(path: str | None, sandbox: str) -> None:
    """Prove the reference gets full marks and every literal agrees with the reference."""
    from .diagnose import MUTATION_SECTION
    from .validate import validate_rubric

    loaded = _rubric(path)
    click.echo(
        f"{loaded.path}: loads cleanly, {len(loaded.checks)} checks in {len(loaded.sections)} sections, "
        f"{loaded.total:g} points."
    )
    outcome = validate_rubric(loaded, runner=make_runner(sandbox), seed=new_seed())
    click.echo(
        f"Literal values checked against the reference: {outcome.literals_checked}, "
        f"disagreeing: {len(outcome.literal_errors)}"
    )
    for error in outcome.literal_errors:
        click.echo(f"  {error}")
    ref = outcome.reference_result
    click.echo(
        f"Reference solution: {ref.score:g}/{ref.max_score:g} ({ref.status.value}, seed {ref.seed}, {ref.runner})"
    )
    for section in ref.sections:
        click.echo(f"  {section.tag:20s} {section.points:g}/{section.max_points:g}")
    for failed in [c for c in ref.checks if not c.passed]:
        click.echo(f"  FAILED {failed.check_id}: {failed.message}")
    matrix = outcome.matrix
    click.echo(
        f"\nKill matrix: each catalogue bug injected into the reference (rows) against each section (K = caught; "
        f"{MUTATION_SECTION} = the reference's own checks):"
    )
    click.echo(matrix.render())
    for blind in matrix.blind_spots:
        click.echo(f"  BLIND SPOT {blind}: no section catches this bug")
    click.echo(
        f"{len(matrix.rows)} mutants, {len(matrix.blind_spots)} survive every section, "
        f"{len(matrix.not_applicable)} not applicable to the reference."
    )
    if not outcome.ok:
        raise click.ClickException("the rubric is not valid")
    click.echo("Rubric is valid.")


@cli.group()
def image() -> None:
    """Sandbox image tools."""


@image.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when the inputs have not changed.")
@click.option("--base", help="Base image (default: python:3.11-slim if available, else an offline Debian base).")
def image_build(force: bool, base: str | None) -> None:
    """Build the sandbox image (only when its inputs changed)."""
    from .image import ensure_image

    tag = ensure_image(force=force, base=base, log=lambda line: click.echo(line, err=True))
    click.echo(tag)


def _write(result: SubmissionResult, html_out: Path | None, json_out: Path | None) -> None:
    if html_out:
        write_feedback_html(result, html_out)
        click.echo(f"HTML feedback: {html_out}")
    if json_out:
        write_gradescope(result, json_out)
        click.echo(f"results.json: {json_out}")


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except GraderError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(error.exit_code)

"""Every command in the README and docs/*.md works as written.

A command is a `$ ` line of a ```console block (or any line of an ```sh/```bash block). Each one
is declared in COMMANDS with how it is proved, and a command added to a page without a
declaration fails `test_every_command_is_declared`:

- RUN: run as written in a scratch folder (a copy of the rubric, a small graded class in `out/`);
  never in the repository.
- RUN_DOCKER: the same, but it needs the sandbox image and takes a while (slow suite).
- SAME_AS: `make grade` and the grader line it runs grade the sample class in Docker, which
  tests/integration/test_sample_class.py already does in `make test`; the test here proves the
  command's arguments mean what that test runs, rather than grading the class twice.
- SERVE: `make serve` serves until stopped: its recipe is started (slow suite) on a free port,
  with a private database, until /status/ answers OK, and stopped with Ctrl-C.
- BESIDE_SERVE: administration run beside that service, in the page's order, on its database.
- SUITE: `make test` (everything) and `make test-fast` (no slow tests) are the suites this test runs
  in: `make -n` proves the target exists and runs pytest with the marker the pages describe.
- PARSE: runs until stopped (a worker): the CLI parses its arguments without running it.
- HELP: minutes long and rewrites BENCHMARKS.md: `--help` answers and names every option used.
- HOST: a production host's setup (a remote to clone, root, the system's PostgreSQL): each
  program it names is installed here.
"""

from __future__ import annotations

import ast
import enum
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent  # `grader` and `python` as the pages mean them: the venv's
SHELL_BLOCKS = {"console", "sh", "shell", "bash"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


class Kind(enum.Enum):
    RUN = "run"
    RUN_DOCKER = "run in Docker"
    SAME_AS = "identical to a test's run"
    SERVE = "served, then stopped"
    BESIDE_SERVE = "run beside the service"
    SUITE = "the test suite itself"
    PARSE = "arguments parsed"
    HELP = "--help"
    HOST = "programs installed"


@dataclass(frozen=True)
class Spec:
    kind: Kind
    why: str
    makes: tuple[str, ...] = ()  # files a run must leave in the scratch folder


SLOW_BENCH = "minutes long, and it rewrites BENCHMARKS.md"
HOST_SETUP = "a production host's setup: a remote to clone, root and the system's PostgreSQL"

COMMANDS: dict[str, Spec] = {
    "make grade": Spec(Kind.SAME_AS, "grades the sample class in Docker, as test_sample_class.py does"),
    "grader grade submissions --out out --sandbox docker": Spec(Kind.SAME_AS, "make grade's recipe"),
    "make serve": Spec(Kind.SERVE, "serves until stopped"),
    "make test": Spec(Kind.SUITE, "the suite this test runs in"),
    "make test-fast": Spec(Kind.SUITE, "the suite without its slow tests"),
    "grader export out": Spec(Kind.RUN, "rewrites the reports of a small stored class", ("out/grades.csv",)),
    "grader similarity out": Spec(Kind.RUN, "compares a small stored class", ("out/similarity.html",)),
    "grader rubric reseed rubrics/a8_autograd_lab.yaml": Spec(Kind.RUN, "on a copy of the rubric"),
    "grader rubric validate rubrics/a8_autograd_lab.yaml": Spec(
        Kind.RUN_DOCKER, "the reference and every catalogue bug in the sandbox"
    ),
    "grader check autograd_lab.py --html feedback.html": Spec(
        Kind.RUN_DOCKER, "a sample student's file in the sandbox", ("feedback.html",)
    ),
    "grader service demo": Spec(Kind.BESIDE_SERVE, "the demo course"),
    "grader service roster a8 roster.csv": Spec(Kind.BESIDE_SERVE, "a roster file of two students"),
    "grader service token student1": Spec(Kind.BESIDE_SERVE, "its token feeds the curl line"),
    "grader service admin ops": Spec(Kind.BESIDE_SERVE, "an operator"),
    "grader service keys": Spec(Kind.BESIDE_SERVE, "the LTI signing key"),
    "grader service lti-registration-url --hours 24": Spec(Kind.BESIDE_SERVE, "a registration URL"),
    "python -m service.manage axes_reset_username student1": Spec(Kind.BESIDE_SERVE, "django-axes' reset"),
    'curl -H "Authorization: Token $TOKEN" -F kind=submit -F file=@autograd_lab.py '
    "http://127.0.0.1:8000/api/v1/assignments/a8/submissions": Spec(
        Kind.BESIDE_SERVE, "an upload through the API (to the test's port, not 8000)"
    ),
    "grader worker --lanes self_check,submit": Spec(Kind.PARSE, "takes jobs until stopped; make serve runs one"),
    "python bench/bench_mutation.py --write BENCHMARKS.md": Spec(Kind.HELP, SLOW_BENCH),
    "python bench/bench_throughput.py --write BENCHMARKS.md": Spec(Kind.HELP, SLOW_BENCH),
    "python bench/bench_feedback.py --write BENCHMARKS.md": Spec(Kind.HELP, SLOW_BENCH),
    "python bench/bench_shrink.py --write BENCHMARKS.md": Spec(Kind.HELP, SLOW_BENCH),
    "python bench/synth_class.py OUT --students 300": Spec(Kind.HELP, "minutes long, and writes a class of 300"),
    "git clone <your copy of the repository> /opt/autograder && cd /opt/autograder": Spec(Kind.HOST, HOST_SETUP),
    "git checkout <release>": Spec(Kind.HOST, HOST_SETUP),
    "python3 -m venv .venv && .venv/bin/pip install -e .": Spec(Kind.HOST, HOST_SETUP),
    "sudo -u postgres createuser --pwprompt grader": Spec(Kind.HOST, HOST_SETUP),
    "sudo -u postgres createdb --owner grader grader": Spec(Kind.HOST, HOST_SETUP),
}


def _without_comment(line: str) -> str:
    return re.split(r"\s+#(?:\s|$)", line, maxsplit=1)[0].strip()


def commands_in(text: str) -> list[str]:
    found: list[str] = []
    for lang, body in FENCE.findall(text):
        lang = lang.strip()
        if lang not in SHELL_BLOCKS:
            continue
        pending = ""
        for line in body.splitlines():
            if lang == "console":
                if not pending and not line.startswith("$ "):
                    continue  # the command's output
                line = line[2:] if not pending else line
            elif not line.strip() or line.lstrip().startswith("#"):
                continue
            line = line.lstrip() if pending else line
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1].rstrip() + " "
                continue
            found.append(_without_comment(pending + line))
            pending = ""
    return found


def documented() -> dict[str, list[str]]:
    """Each command, with the pages it appears in, in page order."""
    where: dict[str, list[str]] = {}
    for page in PAGES:
        for command in commands_in(page.read_text()):
            where.setdefault(command, []).append(page.relative_to(REPO).as_posix())
    return where


def of_kind(kind: Kind) -> list[str]:
    return [command for command, spec in COMMANDS.items() if spec.kind is kind]


# --- the declarations themselves ------------------------------------------------------------------


def test_the_pages_have_commands_and_the_extraction_reads_them() -> None:
    sample = "```console\n$ grader export out   # rewrite\noutput line\n$ make \\\n  grade\n```\n```text\nnot me\n```\n"
    assert commands_in(sample) == ["grader export out", "make grade"]
    assert {"make grade", "make serve", "make test", "make test-fast"} <= set(documented())


def test_every_command_is_declared() -> None:
    missing = {c: pages for c, pages in documented().items() if c not in COMMANDS}
    assert not missing, f"declare how these are proved in COMMANDS: {missing}"


def test_no_declaration_is_stale() -> None:
    assert set(COMMANDS) - set(documented()) == set()


def test_every_fence_names_its_language() -> None:
    # An unnamed block could hide a command from this test: commands go in ```console blocks,
    # usage synopses in ```text.
    bare = [page.name for page in PAGES for lang, _ in FENCE.findall(page.read_text()) if not lang.strip()]
    assert bare == []


def test_the_readme_opens_with_the_three_commands_in_order() -> None:
    first = commands_in((REPO / "README.md").read_text())[:4]
    assert first == ["make grade", "make serve", "make test", "make test-fast"]


# --- the scratch folder -----------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "SECRET_KEY_FILE")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


def _class_store(out: Path) -> None:
    """A small graded class as the store holds it: the reports are rewritten from it."""
    sys.path.insert(0, str(REPO / "tests" / "unit"))  # the unit tests' builders of stored results
    try:
        from test_similarity_cli import a_class
    finally:
        sys.path.remove(str(REPO / "tests" / "unit"))
    a_class(out)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "rubrics").mkdir()
    shutil.copy(REPO / "rubrics" / "a8_autograd_lab.yaml", tmp_path / "rubrics")
    (tmp_path / "out").mkdir()
    _class_store(tmp_path / "out")
    shutil.copy(REPO / "submissions" / "alice_nguyen" / "autograd_lab.py", tmp_path / "autograd_lab.py")
    (tmp_path / "roster.csv").write_text("username,email,name\nada,ada@example.edu,Ada Lovelace\n")
    return tmp_path


def _run(command: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _seed(rubric: Path) -> str:
    match = re.search(r"^\s*seed:\s*(\d+)", rubric.read_text(), re.M)
    assert match is not None
    return match.group(1)


@pytest.mark.parametrize("command", of_kind(Kind.RUN))
def test_run(command: str, scratch: Path) -> None:
    rubric = scratch / "rubrics" / "a8_autograd_lab.yaml"
    before = _seed(rubric)
    _run(command, scratch)
    for made in COMMANDS[command].makes:
        assert (scratch / made).is_file(), made
    if "reseed" in command:
        assert _seed(rubric) != before
        assert _seed(REPO / "rubrics" / "a8_autograd_lab.yaml") == before  # the repository's is untouched


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("command", of_kind(Kind.RUN_DOCKER))
def test_run_in_docker(command: str, scratch: Path) -> None:
    _run(command, scratch)
    for made in COMMANDS[command].makes:
        assert (scratch / made).is_file(), made


# --- make grade: the sample class test's own run -----------------------------------------------------


def _recipe(target: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=REPO, capture_output=True, text=True, check=True
    )
    return [line for line in done.stdout.splitlines() if line.strip()]


def _grade_params(command: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    from grader.cli import cli

    monkeypatch.chdir(REPO)  # where make runs it: SOURCE must exist (nothing is written)
    words = shlex.split(command)[1:]
    with click.Context(cli) as parent:
        grade = cli.get_command(parent, words[0])
        assert grade is not None
        return grade.make_context(words[0], words[1:], parent=parent).params


def test_make_grade_runs_what_the_sample_class_test_grades(monkeypatch: pytest.MonkeyPatch) -> None:
    # `make grade` runs the documented grader line (after building the image) ...
    grading = _recipe("grade")[-1]
    assert grading.split("/")[-1] == "grader grade submissions --out out --sandbox docker"
    assert "grader grade submissions --out out --sandbox docker" in COMMANDS
    # ... whose arguments mean: the sample class, the shipped rubric, the assignment's seed, Docker,
    params = _grade_params("grader grade submissions --out out --sandbox docker", monkeypatch)
    assert (params["sandbox"], params["rubric_path"], params["seed"], params["force"]) == ("docker", None, None, False)
    # ... and test_sample_class.py (part of `make test`) grades that folder with those: only the
    # output folder (a temporary one) and --jobs (2) differ.
    path = REPO / "tests" / "integration" / "test_sample_class.py"
    spec = importlib.util.spec_from_file_location("sample_class_for_docs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.SUBMISSIONS.resolve() == (REPO / str(params["source"])).resolve()
    tree = ast.parse(path.read_text())
    fixture = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "graded")
    call = next(n for n in ast.walk(fixture) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "grade_class")
    assert [ast.unparse(a) for a in call.args] == ["SUBMISSIONS"]
    keywords = {k.arg: ast.unparse(k.value) for k in call.keywords}
    assert keywords == {"out": "out", "rubric": "load_rubric()", "runner": "DockerRunner()", "jobs": "2"}
    assert "slow" not in ast.unparse(fixture) and "pytest.mark.docker" in path.read_text()


# --- the suites ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "marker"), [("make test", None), ("make test-fast", '-m "not slow"'), ("make test-slow", "-m slow")]
)
def test_the_suite_targets_run_pytest_with_their_marker(command: str, marker: str | None) -> None:
    pytest_line = _recipe(command.split()[1])[-1]
    assert "-m pytest tests -q " in pytest_line
    if marker is None:  # the README's test command runs everything: no marker leaves a test out
        assert " -m " not in pytest_line.replace("-m pytest", "")
    else:
        assert f" {marker} " in f"{pytest_line} "
    assert " -n auto " in pytest_line, "both suites run on every core"
    assert "REQUIRE_DOCKER=1" in pytest_line and "REQUIRE_BROWSER=1" in pytest_line


# --- parsed, --help, installed ------------------------------------------------------------------------


@pytest.mark.parametrize("command", of_kind(Kind.PARSE))
def test_parse(command: str) -> None:
    from grader.cli import cli

    words = shlex.split(command)
    assert words[0] == "grader"
    with click.Context(cli) as parent:
        sub = cli.get_command(parent, words[1])
        assert sub is not None
        params = sub.make_context(words[1], words[2:], parent=parent).params
    assert params["lanes"] == "self_check,submit"


@pytest.mark.parametrize("command", of_kind(Kind.HELP))
def test_help(command: str) -> None:
    words = shlex.split(command)
    assert words[0] == "python"
    answer = _run(shlex.join([sys.executable, words[1], "--help"]), REPO, timeout=120)
    for option in (w for w in words if w.startswith("--")):
        assert option in answer, f"{words[1]} --help does not name {option}"


def _installed(program: str) -> bool:
    if shutil.which(program):
        return True
    return bool(list(Path("/usr/lib/postgresql").glob(f"*/bin/{program}")))  # Debian's, off PATH


@pytest.mark.parametrize("command", of_kind(Kind.HOST))
def test_host(command: str) -> None:
    for part in command.split("&&"):
        words = shlex.split(part)
        if words[:2] == ["sudo", "-u"]:
            words = words[3:]
        if words[0] == "cd" or words[0].startswith(".venv/"):
            continue  # a folder, or a program the command itself just installed
        assert _installed(words[0]), words[0]


# --- make serve, and the administration beside it -----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


@pytest.fixture
def database() -> Iterator[str]:
    from service import devdb

    folder = Path(tempfile.mkdtemp(prefix="grader-docs-pg-"))  # not pytest's: the cluster may run as postgres
    try:
        yield devdb.start(folder)
    finally:
        devdb.stop(folder, mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.db
def test_make_serve_answers_then_the_administration_beside_it(scratch: Path, database: str) -> None:
    assert _recipe("serve")[-1].endswith("-m service.serve")  # after the image and PostgreSQL's programs
    port = _free_port()
    site = f"http://127.0.0.1:{port}"
    env = _env(DATABASE_URL=database, SECRET_KEY="docs-test-key", SITE_ROOT=site)
    log = scratch / "serve.log"  # a file, not a pipe nobody reads while it serves
    with log.open("w") as sink:
        serving = subprocess.Popen(
            [sys.executable, "-m", "service.serve"],
            cwd=scratch,
            env={**env, "PORT": str(port)},
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        status = (0, "")
        for _ in range(600):  # migrations, the demo course and the worker's start; bounded, not timed
            if serving.poll() is not None:
                break
            try:
                status = _get(f"{site}/status/")
            except OSError:
                status = (0, "")
            if status == (200, "OK"):
                break
            time.sleep(0.5)
        assert status[0] == 200 and status[1].strip() == "OK", log.read_text()
        assert _get(f"{site}/health/")[0] in (200, 302)  # anonymous: the page, or the sign-in first

        beside = [c for c in documented() if COMMANDS.get(c, Spec(Kind.RUN, "")).kind is Kind.BESIDE_SERVE]
        token = ""
        for command in beside:
            line = command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
            output = _run(line, scratch, env={**env, "TOKEN": token})
            if command == "grader service token student1":
                token = output.split()[-1]
            if command.startswith("curl"):
                assert '"sha256"' in output and '"queue_position"' in output, output
        assert token.startswith("agt_")
    finally:
        if serving.poll() is None:
            serving.send_signal(signal.SIGINT)  # Ctrl-C: the web process and the worker stop too
            try:
                serving.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(serving.pid, signal.SIGKILL)
                serving.wait()
    assert serving.returncode == 0, log.read_text()

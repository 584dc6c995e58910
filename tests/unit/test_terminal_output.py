"""Nothing from a submission or a class download reaches the instructor's terminal as a control sequence.

Folder names, zip member names, Canvas/Gradescope names and student output can carry ESC sequences
(window title, erase screen, OSC 8 hyperlinks), BEL, C1 controls and bidi overrides. Every string the
CLI prints goes through `printable`, which shows them as escapes; rich never reads them as markup.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from result_builders import make_check, make_submission
from rich.console import Console

from grader.cli import cli
from grader.report import render_summary
from grader.report.batch_view import BatchProgress
from grader.report.view import printable
from grader.results import SubmissionResult

# Sets the window title to "pwned" (OSC 0, ended by BEL), then erases the screen (CSI 2J).
EVIL = "\x1b]0;pwned\x07\x1b[2J"
EVIL_SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J"
# Everything a terminal would obey, or that reorders what a reader sees.
_OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
BIDI = ("\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068")
MARKUP = "[red]x[/red] [link=https://evil.example]y[/link] [bold"
FOLDER_MARKUP = "[bold red]x[link=evil.example]y :smile:"  # no "/": it has to be a folder's name


def assert_inert(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in _OBEYED.findall(text)})
    assert not found, f"raw control characters reached the terminal: {found}"


# ---------------------------------------------------------------- printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (EVIL, EVIL_SHOWN),
        (
            "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
            "\\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\",
        ),
        ("bell\x07", "bell\\x07"),
        ("nul\x00 del\x7f", "nul\\x00 del\\x7f"),
        ("c1 csi\x9b2J osc\x9d0;t\x9c", "c1 csi\\x9b2J osc\\x9d0;t\\x9c"),
        ("over\rwrite", "over\\x0dwrite"),
        ("back\x08space", "back\\x08space"),
        ("abc\u202edcba", "abc\\u202edcba"),
        ("\u2066isolate\u2069", "\\u2066isolate\\u2069"),
        ("\u200emark\u200f \u061c", "\\u200emark\\u200f \\u061c"),
    ],
)
def test_printable_shows_controls(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(raw, one_line=True) == shown


def test_printable_covers_every_control_and_bidi_character() -> None:
    controls = [chr(code) for code in (*range(0x00, 0x20), *range(0x7F, 0xA0))]
    for char in (*controls, *BIDI, "\u2069"):
        assert_inert(printable(char, one_line=True))
        if char not in "\n\t":
            assert_inert(printable(char))
            assert printable(char).startswith("\\")


def test_printable_keeps_line_breaks_unless_one_line() -> None:
    assert printable("a\nb\tc\r\nd") == "a\nb\tc\nd"
    assert printable("a\nb\tc\r\nd", one_line=True) == "a\\x0ab\\x09c\\x0ad"


def test_printable_leaves_ordinary_text_alone() -> None:
    text = "Zoë Ng 中文 ∂L/∂a ✓ 😀 [red]x[/red] \\x1b C:\\path\u2060"
    assert printable(text) == text == printable(text, one_line=True)


# ---------------------------------------------------------------- rich writers


def hostile_result(name: str) -> SubmissionResult:
    return make_submission(
        (make_check("fields", "api", message=f"{name} message"),), {"api": "Value API"}, student=name, filename=name
    )


def test_summary_header_is_one_inert_line() -> None:
    name = f"eve{EVIL}\u202e{MARKUP}\nfake: 100 / 100"
    for color in (False, True):
        text = render_summary(hostile_result(name), color=color)
        plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the writer's own colours, when asked for
        assert_inert(plain)
        assert EVIL_SHOWN in plain and "\\u202e" in plain and MARKUP in plain
        assert not any(line.startswith("fake") for line in plain.splitlines())


def test_progress_lines_are_inert_and_literal() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False, highlight=False)
    name = "\u202e[link=x]:smile:\x07\nf"  # shown in 30 characters: the line keeps 32
    with BatchProgress(console) as progress:
        progress.event("graded", hostile_result(name))
    out = buffer.getvalue()
    assert_inert(out)
    assert out.count("\n") == 1 and "\\u202e[link=x]:smile:\\x07\\x0af " in out
    assert out.startswith(f"  {printable(name, one_line=True)[:32]}")


# ---------------------------------------------------------------- the CLI


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    # rich would colour its own tables when told to: only the students' strings are under test.
    for variable in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    return CliRunner()


def _grade(runner: CliRunner, source: Path, out: Path) -> tuple[str, str]:
    # color=True: click keeps escape sequences as a terminal would get them (it strips some from a pipe).
    outcome = runner.invoke(
        cli, ["grade", str(source), "--out", str(out), "--sandbox", "local", "--seed", "1"], color=True
    )
    assert outcome.exit_code == 0, outcome.output
    return outcome.stdout, outcome.stderr


def test_grade_of_a_folder_with_hostile_names(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "class"
    for student in (f"eve{EVIL}", "bob"):
        (source / student).mkdir(parents=True)
        (source / student / "autograd_lab.py").write_text("x = 1\n", encoding="utf-8")
    (source / "bob" / f"old{EVIL}\u202egpj.zip").write_bytes(b"PK")  # a nested archive is named, not opened
    (source / f"notes{EVIL}\nwarning: fake.txt").write_text("loose", encoding="utf-8")
    stdout, stderr = _grade(runner, source, tmp_path / "out")
    for stream in (stdout, stderr):
        assert "\x1b" not in stream and "\x07" not in stream
        assert_inert(stream)
    assert f"old{EVIL_SHOWN}\\u202egpj.zip" in stderr
    assert f"notes{EVIL_SHOWN}\\x0awarning: fake.txt" in stderr
    assert not any(line.startswith("warning: fake") for line in stderr.splitlines())


def test_grade_of_a_zip_with_hostile_member_names(runner: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "class.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr(f"eve{EVIL}/autograd_lab.py", "x = 1\n")
        archive.writestr("bob/autograd_lab.py", "x = 1\n")
        archive.writestr(f"readme{EVIL}.txt", "loose")
        archive.writestr(f"../{EVIL}.py", "unsafe")
    stdout, stderr = _grade(runner, source, tmp_path / "out")
    for stream in (stdout, stderr):
        assert "\x1b" not in stream and "\x07" not in stream
        assert_inert(stream)
    assert f"readme{EVIL_SHOWN}.txt" in stderr and f"{EVIL_SHOWN}.py" in stderr


def test_check_of_a_file_in_a_hostile_folder(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / f"eve{EVIL}\u202e{FOLDER_MARKUP}"
    folder.mkdir()
    (folder / "autograd_lab.py").write_text("x = 1\n", encoding="utf-8")
    outcome = runner.invoke(cli, ["check", str(folder / "autograd_lab.py"), "--sandbox", "local"], color=True)
    assert outcome.exit_code == 0, outcome.output
    assert_inert(outcome.stdout)
    assert_inert(outcome.stderr)
    assert f"eve{EVIL_SHOWN}\\u202e{FOLDER_MARKUP}" in outcome.stdout


def test_every_cli_line_goes_through_printable() -> None:
    # A new click.echo in the CLI would bypass the sanitising `echo`.
    source = Path(__file__).resolve().parents[2] / "grader" / "cli.py"
    calls = re.findall(r"click\.echo\(", source.read_text(encoding="utf-8"))
    assert len(calls) == 1  # the one inside `echo` itself

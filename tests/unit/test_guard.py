"""The probe child's defences against student code that would speak for the harness.

The audit hook cannot be removed once added, so each hook test runs in its own interpreter."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sandbox.harness.execution import runs, sealed

ROOT = Path(__file__).resolve().parents[2]


def _after_hook(body: str) -> str:
    program = "from sandbox.harness.execution import guard\nprivileged = guard.install()\n" + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "attempt",
    [
        "import sys; sys._getframe()",
        "import sys; sys._current_frames()",
        "import gc; gc.get_objects()",
        "import gc; gc.get_referrers(object())",
        "import sys; sys.settrace(lambda *a: None)",
        "import ctypes; ctypes.string_at(id(1), 8)",
        "open('/proc/self/mem', 'rb')",
        "open('/dev/fd/../mem', 'rb')",
        "import os; os.chdir('/proc')",
        "import os; os.symlink('/proc/self/mem', 'x')",
        "import os; os.execv('/bin/true', ['true'])",
        "import subprocess; subprocess.run(['true'])",
        "\ndef g():\n    yield 1\ng().gi_frame",
        "\ntry:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    ],
)
def test_the_hook_refuses(attempt: str) -> None:
    refusals = "(OSError, ValueError, AttributeError, RuntimeError)"
    body = f"try:\n{textwrap.indent(attempt.strip(), '    ')}\nexcept {refusals}:\n    print('refused')\n"
    body += "else:\n    print('allowed')"
    assert _after_hook(body) == "refused"


def test_the_standard_library_carries_on_without_frames() -> None:
    # namedtuple, logging and typing ask for their caller's frame and expect ValueError without one.
    out = _after_hook(
        """
        import collections, logging, typing
        Point = collections.namedtuple("Point", "x y")
        logging.getLogger("x").warning("a warning")
        T = typing.TypeVar("T")
        print(Point(1, 2).x, open(__import__("os").devnull).read() == "")
        """
    )
    assert out == "1 True"


def test_privileged_reads_frames() -> None:
    assert _after_hook("import sys\nprint(privileged(lambda: sys._getframe() is not None))") == "True"


def test_private_copies_do_not_see_patched_modules() -> None:
    copies = sealed.build()
    from sandbox.harness.probes import programs

    original = programs.read_float
    try:
        programs.read_float = lambda value: 42.0  # type: ignore[assignment]
        assert copies["probes.programs"].read_float(1.5) == 1.5
    finally:
        programs.read_float = original
    assert copies["probes.programs"] is not programs
    # A class's methods lead to a namespace of their own, never to the copy's module.
    stage = copies["probes.programs"].ProgramError.stage.fget
    assert stage.__globals__ is not vars(copies["probes.programs"])


def test_private_copies_share_one_another_across_packages() -> None:
    copies = sealed.build()
    child = copies["execution.child"]
    assert child.programs is copies["probes.programs"] and child.wire is copies["wire"]
    assert child.guard is copies["execution.guard"] and copies["probes.loader"].syntax is copies["syntax"]
    from sandbox.harness.probes import loader

    assert copies["probes.loader"]._COMPILED == loader._COMPILED  # inherited, as a copy of its own
    assert copies["probes.loader"]._COMPILED is not loader._COMPILED
    real = {id(module) for name, module in sys.modules.items() if name.startswith("sandbox.harness")}
    assert not [(path, name) for path, made in copies.items() for name, held in vars(made).items() if id(held) in real]
    private_import = vars(child)["__builtins__"]["__import__"]
    for name, fromlist, level in [("", ("sealed",), 1), ("sealed", (), 1), ("", ("x",), 3), ("", ("runs",), 1)]:
        with pytest.raises(ImportError):  # not among the copies, or outside the harness
            private_import(name, vars(child), None, fromlist, level)


def _tag(key: bytes, count: int, body: bytes) -> bytes:
    return hmac.new(key, b"%d:" % count + body, hashlib.sha256).hexdigest().encode() + b" " + body


def test_tagged_records_in_step_only() -> None:
    key = b"k" * 32
    channel = runs._Tagged(key, expects_done=True)
    assert channel.open(_tag(key, 1, b'{"t":"obs"}')) == b'{"t":"obs"}'
    with pytest.raises(runs.Forged):
        channel.open(_tag(key, 1, b'{"t":"obs"}'))  # a replayed place in the run
    with pytest.raises(runs.Forged):
        runs._Tagged(key, expects_done=True).open(b'{"t":"obs"}')  # an untagged line
    with pytest.raises(runs.Forged):
        runs._Tagged(key, expects_done=True).open(_tag(b"x" * 32, 1, b"{}"))  # another key

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


def test_privileged_reads_a_traceback_on_the_main_thread_only() -> None:
    out = _after_hook(
        """
        import sys, threading
        try:
            1 / 0
        except ZeroDivisionError as error:
            trace = error.__traceback__
        print(privileged(lambda: trace.tb_frame is not None))
        try:
            privileged(sys._getframe)  # frame attributes only
        except ValueError:
            print("refused")
        seen = []

        def elsewhere():
            try:
                privileged(lambda: trace.tb_frame)
            except AttributeError:
                seen.append("refused")

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        print(*seen)
        """
    )
    assert out.split() == ["True", "refused", "refused"]


def test_the_hook_reads_no_name_student_code_can_rebind() -> None:
    # Student code reaches this module's namespace and builtins (a frame of the main thread shows
    # them), and a signal handler can run inside the hook: it reads only its closure.
    import dis

    from sandbox.harness.execution import guard

    hook, _ = guard._make_hook(0)
    cells = [cell.cell_contents for cell in hook.__closure__ or ()]
    names_proc = next(f for f in cells if getattr(f, "__name__", "") == "names_proc")
    for function in (hook, names_proc):
        loads = {i.opname for i in dis.get_instructions(function)}
        assert not loads & {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}, function


@pytest.mark.parametrize(
    "attempt",
    [
        # os.path.realpath (Python code reading rebindable names) no longer decides.
        "import os, posixpath\nos.lstat = lambda p, **k: os.stat('/')\nposixpath.islink = lambda p: False\n"
        "open('/dev/fd/../mem', 'rb')",
        "import os\nopen(os.path.join(os.getcwd(), *[os.pardir] * 30, 'proc', 'self', 'mem'), 'rb')",
        "open('/proc/999999999/mem', 'rb')",  # not there yet: its nearest parent decides
        # Its __fspath__ could answer otherwise when the file is opened.
        "import io\nclass P:\n    def __fspath__(self):\n        return 'x'\nio.FileIO(P())",
    ],
)
def test_proc_is_judged_by_what_a_path_resolves_to(attempt: str) -> None:
    body = f"try:\n{textwrap.indent(attempt.strip(), '    ')}\nexcept PermissionError:\n    print('refused')\n"
    body += "except OSError as error:\n    print('failed', error)\nelse:\n    print('allowed')"
    assert _after_hook(body) == "refused"


def test_plain_files_still_open(tmp_path: Path) -> None:
    target = tmp_path / "made" / "here.txt"
    target.parent.mkdir()
    out = _after_hook(
        f"""
        with open({str(target)!r}, "w") as handle:
            handle.write("x")
        print(open({str(target).encode()!r}).read(), open(__import__("os").devnull).read() == "")
        """
    )
    assert out == "x True"


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

"""What keeps a child cheap without changing what it observes: the submission compiled once
in the fork server, no cleanup child for a run that left nothing, and mutants written back by
comparing only the statements their edit touched; and what a run leaves behind, removed however
it is nested and charged to the grading."""

from __future__ import annotations

import builtins
import glob
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from sandbox.harness.execution import child, child_records, runs
from sandbox.harness.execution.clock import Budget
from sandbox.harness.execution.zygote import Zygote
from sandbox.harness.mutation import mutate, splice
from sandbox.harness.probes import loader

REPO = Path(__file__).resolve().parents[2]
SOURCE = (REPO / "reference" / "autograd_lab.py").read_text(encoding="utf-8")


def test_a_precompiled_submission_is_executed_not_compiled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    assert loader.precompile(SOURCE, "autograd_lab.py")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compiled again")

    monkeypatch.setattr(builtins, "compile", refuse)
    module, _ = loader.load_module(SOURCE, "autograd_lab.py", "full")
    assert (module.Value(2.0) * 3).data == 6.0
    assert module.Value.__add__.__code__.co_filename == "autograd_lab.py"  # tracebacks name the file
    with pytest.raises(AssertionError, match="compiled again"):
        loader.load_module(SOURCE + "\n", "autograd_lab.py", "full")  # another text is compiled as ever
    monkeypatch.undo()
    loader._COMPILED.clear()


def test_the_fork_server_compiles_on_request_and_still_forks() -> None:
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        assert zygote.precompile(SOURCE, "autograd_lab.py") is True
        assert zygote.precompile("def broken(:\n", "autograd_lab.py") is False  # refused, never fatal
        # numpy is imported for the children only when a file asks for it; nothing else is.
        assert zygote.preload("os.path") is False and zygote.preload("autograd_lab") is False
        assert zygote.preload("numpy") is (importlib.util.find_spec("numpy") is not None)
        # The fork server still forks after both.
        who = runs.Identity(None, None)
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, who, budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        task = {"kind": "cleanup", "filename": "", "source": "", "mode": "", "stand_ins": [], "scratch": ""}
        records, summary = run.run(task, runs._NoRecords(), timeout=5.0, progress_resets=False)
        assert summary["status"] == "ok" and records == []
        run.close()
    finally:
        zygote.close()


def test_a_run_that_left_no_file_needs_no_cleanup_child(tmp_path: Path) -> None:
    assert runs._nothing_left(str(tmp_path), os.getuid()) is (not _ipc_objects_of_mine())
    (tmp_path / "left.txt").write_text("x")
    assert runs._nothing_left(str(tmp_path), os.getuid()) is False
    assert runs._nothing_left(str(tmp_path / "gone"), os.getuid()) is False  # unreadable: the child looks


def test_what_a_run_left_is_removed_however_deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    (outside / "kept").write_text("x")
    monkeypatch.chdir(scratch)
    for index in range(3000):
        os.mkdir(f"d{index}")  # empty: removed at once
    (scratch / "link").symlink_to(outside)  # removed, never followed
    locked = scratch / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "file").write_text("x")
    locked.chmod(0)  # its owner opens it first
    # Deeper than the recursion limit, and a path longer than PATH_MAX.
    for _ in range(1200):
        os.mkdir("nested")
        os.chdir("nested")
    Path("bottom").write_text("x")
    os.chdir(tmp_path)
    child._empty(str(scratch))
    assert os.listdir(scratch) == []
    assert (outside / "kept").read_text() == "x"


class _CleanedByAChild(runs.Identity):
    """This user, with a cleanup child after every run that left something, as in the sandbox
    (where it runs as the student uid, the only one that may remove what that uid made)."""

    @property
    def drops(self) -> bool:
        return True


class _Spy:
    """What ``Runs._clean`` charged, for each scratch folder it emptied."""

    def __init__(self, clean: Any) -> None:
        self.clean = clean
        self.charged: list[tuple[str, float]] = []

    def __call__(self, scratch: str) -> float:
        seconds: float = self.clean(scratch)
        self.charged.append((scratch, seconds))
        return seconds


def test_the_cleanup_of_what_a_run_left_is_charged_to_the_grading() -> None:
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        run.who = _CleanedByAChild(None, None)  # after Runs made its scratch root (as root, it would lock /tmp)
        spy = _Spy(run._clean)
        run._clean = spy  # type: ignore[method-assign]
        mess = "import os\nfor _i in range(2000):\n    os.mkdir(f'd{_i}')\nos.makedirs('a/' * 100 + 'b')"
        _, summary = run.run(_load_task(mess), child_records.LoadRecords(), timeout=20.0, progress_resets=False)
        run.close()
    finally:
        zygote.close()
    assert summary["status"] == "ok"
    [(scratch, cleanup)] = spy.charged
    assert not os.path.exists(scratch)
    assert cleanup > 0  # a child of its own ran, and the grading paid for it ...
    assert budget.children == pytest.approx(summary["elapsed"] + cleanup, abs=2e-3)  # ... on top of the run


def _ipc_objects_of_mine() -> bool:
    uid = str(os.getuid())
    for kind in ("msg", "sem", "shm"):
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            return True
        column = header.split().index("uid")
        if any(row.split()[column] == uid for row in rows if len(row.split()) > column):
            return True
    return False


def _parses(path: str) -> bool:
    try:
        loader.parse(Path(path).read_text(encoding="utf-8"), "autograd_lab.py")
    except loader.LoadError:
        return False  # a file that does not parse has no mutants
    return True


ENGINES = [p for p in sorted(glob.glob(str(REPO / "submissions" / "*" / "autograd_lab.py"))) if _parses(p)][:6]


@pytest.mark.parametrize("path", ENGINES, ids=lambda p: Path(p).parent.name)
def test_mutants_written_back_from_their_edited_lines_are_the_mutants_of_a_full_comparison(path: str) -> None:
    source = Path(path).read_text(encoding="utf-8")
    original = loader.parse(source, "autograd_lab.py")
    for operator in mutate.CATALOGUE:
        try:
            text, lines = mutate.mutate_text(source, operator.id, "Value")
        except mutate.NotApplicable:
            continue
        mutated, same_lines = mutate.mutate(loader.parse(source, "autograd_lab.py"), operator.id, "Value")
        assert same_lines == lines
        assert text == splice.write_back(source, original, mutated), operator.id


def _load_task(top: str) -> dict[str, Any]:
    source = f"{top}\n\nclass Value:\n    def __init__(self, data):\n        self.data = data\n"
    lines = source.count("\n")
    return {
        "kind": "load",
        "filename": "autograd_lab.py",
        "source": source,
        "mode": "full",
        "class_name": "Value",
        "class_line": lines - 2,
        "class_end": lines,
        "fillers": [],
        "stand_ins": [],
    }


class _OnlyItsOwnPid:
    """Run numbers as a PID namespace of the run's own hands them out when the run starts no
    thread or process: one each (the local runner shares the machine's, where anything counts)."""

    def __init__(self) -> None:
        self.last = 100

    def __call__(self) -> int:
        self.last += 1
        return self.last


def _timed_out_runs(top: str, count: Path, *, alone: bool = False) -> tuple[dict[str, Any], int, float]:
    """Load a file whose top-level code first counts itself in ``count``, then runs ``top``, with
    a 0.4 s limit: the run's summary, how many children ran it, and what the budget was charged.
    ``alone``: the run is known to start no other task."""
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        if alone:
            run.last_pid = _OnlyItsOwnPid()
        counting = f"with open({str(count)!r}, 'a') as _f:\n    _f.write('x')\n{top}"
        _, summary = run.run(_load_task(counting), child_records.LoadRecords(), timeout=0.4, progress_resets=False)
        run.close()
        return summary, len(count.read_text()), budget.children
    finally:
        zygote.close()


SLEEP_IN_A_THREAD = (
    "import threading, time\n_t = threading.Thread(target=time.sleep, args=(30,))\n_t.start()\n_t.join()"
)


def test_a_run_stopped_waiting_on_its_own_threads_runs_once_more_and_is_charged_once(tmp_path: Path) -> None:
    summary, children, charged = _timed_out_runs(SLEEP_IN_A_THREAD, tmp_path / "count")
    assert summary["status"] == "timeout"
    # The summary is emitted as the probe's end record: nothing of the retry's own is in it.
    assert set(summary) <= {"status", "reason", "output", "output_truncated", "output_tail", "elapsed", "lingering"}
    assert children == 2  # its thread may have waited for a core: it ran again, at once
    assert 0.4 <= charged < 0.7 and summary["elapsed"] == pytest.approx(charged, abs=0.01)


def test_a_single_process_that_sleeps_is_not_run_again(tmp_path: Path) -> None:
    summary, children, charged = _timed_out_runs("import time\ntime.sleep(30)", tmp_path / "count", alone=True)
    assert summary["status"] == "timeout" and children == 1 and 0.4 <= charged < 0.7


def test_a_run_stopped_by_its_own_cpu_time_is_not_run_again(tmp_path: Path) -> None:
    summary, children, charged = _timed_out_runs("while True:\n    pass", tmp_path / "count")
    assert summary["status"] == "timeout" and children == 1 and 0.4 <= charged < 0.7


def test_a_script_run_that_ran_again_keeps_its_record_schema_fresh(tmp_path: Path) -> None:
    # A script child sends `started` before student code runs; the attempt that counts must be
    # judged by a schema that has not seen the first attempt's.
    zygote = Zygote.start(child.main, None, loader.precompile)
    try:
        budget = Budget(3600.0, wall_seconds=3600.0)
        run = runs.Runs(zygote, runs.Identity(None, None), budget=budget, memory_bytes=1 << 31, output_bytes=1 << 20)
        count = tmp_path / "count"
        text = f"with open({str(count)!r}, 'a') as _f:\n    _f.write('x')\n{SLEEP_IN_A_THREAD}\n"
        task = {"kind": "script", "filename": "autograd_lab.py", "text": text, "stand_ins": []}
        records, summary = run.run(task, child_records.ScriptRecords(), timeout=0.4, progress_resets=False)
        run.close()
    finally:
        zygote.close()
    assert len(count.read_text()) == 2  # it ran again
    assert summary["status"] == "timeout", summary.get("reason")
    assert records == [{"t": "started"}]

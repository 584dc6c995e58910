"""Wheats and chaffs: the grader's engines in place of the student's class (Step 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.engines import REFERENCE, REFERENCE_WHEAT, chaffs, disguised, engine_texts, wheats
from grader.mutate import CATALOGUE, FORCED_FAIL, STEP5
from sandbox.harness.mutation.gate import NoGate, spliced_all

CHECKS = textwrap.dedent(
    """
    if __name__ == "__main__":
        x = {name}(3.0)
        y = x * x + x
        y.backward()
        assert abs(x.grad - 7.0) < 1e-9, x.grad
        print("ok", helper())
    """
)

STUDENT = textwrap.dedent(
    """
    import dataclasses

    def helper():
        return "kept"

    @dataclasses.dataclass(eq=False)
    class Scalar:
        data: float
        grad: float = 0.0

        def __mul__(self, other):
            return Scalar(self.data * other.data)

        def __add__(self, other):
            return Scalar(self.data + other.data)

        def backward(self):
            self.grad = 1.0
    """
) + CHECKS.format(name="Scalar")


def run(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "autograd_lab.py"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)


def every_engine() -> dict[str, str]:
    bugs = [op.id for op in CATALOGUE] + [FORCED_FAIL]
    return {e.id: e.text for e in disguised((*wheats(), *chaffs(bugs)), b"k" * 16)}


def test_engine_texts_are_a_class_and_its_imports_only() -> None:
    found = wheats()
    assert found[0].id == REFERENCE_WHEAT and len(found) >= 4  # the reference and independent designs
    for engine in found:
        assert "class Value" in engine.text, engine.id
        assert "Callable" not in engine.text and "Union" not in engine.text  # no annotations to import for
        assert "def main" not in engine.text and "assert " not in engine.text  # no checks, no expected value
        assert '"""' not in engine.text  # no docstring tells one engine's text from another's


def test_a_wrong_engine_and_its_checks_run_on_every_wheat_and_chaff(tmp_path: Path) -> None:
    assert run(STUDENT, tmp_path).returncode != 0  # the student's engine is wrong: the check fails
    class_line = STUDENT.splitlines().index("class Scalar:") + 1
    texts = spliced_all(STUDENT, "autograd_lab.py", "Scalar", class_line, every_engine())
    assert len({t.count("\n") for t in texts.values()}) == 1  # every engine takes the same lines
    for wheat in wheats():
        done = run(texts[wheat.id], tmp_path)
        assert done.returncode == 0 and "ok kept" in done.stdout, (wheat.id, done.stderr)
    assert "dataclass" not in texts[REFERENCE_WHEAT].split("def helper")[1]  # the decorator went with the class
    assert run(texts[STEP5], tmp_path).returncode != 0  # x*x + x catches the Step-5 bug
    assert run(texts[FORCED_FAIL], tmp_path).returncode != 0


def test_the_references_own_checks_pass_on_every_wheat(tmp_path: Path) -> None:
    source = REFERENCE.read_text(encoding="utf-8")
    line = source.splitlines().index("class Value:") + 1
    texts = spliced_all(source, "autograd_lab.py", "Value", line, {w.id: w.text for w in wheats()})
    for name, text in texts.items():
        done = run(text, tmp_path)
        assert done.returncode == 0, (name, done.stderr[-2000:])


def test_disguises_are_the_keys_and_differ_from_the_public_texts() -> None:
    plain = {w.id: w.text for w in wheats()}
    one = {e.id: e.text for e in disguised(wheats(), b"a" * 16)}
    assert one == {e.id: e.text for e in disguised(wheats(), b"a" * 16)}  # the same key, the same engines
    assert one != {e.id: e.text for e in disguised(wheats(), b"b" * 16)}
    assert all(one[k] != plain[k] for k in plain)  # no list of the repository's code names them


def test_no_class_at_that_line_is_no_gate() -> None:
    with pytest.raises(NoGate):
        spliced_all("x = 1\n", "autograd_lab.py", "Value", 1, {REFERENCE_WHEAT: wheats()[0].text})


def test_made_engines_are_kept_and_a_damaged_copy_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOGRAD_GRADER_CACHE", str(tmp_path))
    ids = (REFERENCE_WHEAT, STEP5)
    engine_texts.cache_clear()
    made = engine_texts(ids, b"k" * 16)
    kept = list((tmp_path / "autograd-grader" / "engines").glob("*.json"))
    assert len(kept) == 1 and set(made) == set(ids)
    marked = {k: v + "\n# kept\n" for k, v in made.items()}
    kept[0].write_text(json.dumps(marked), encoding="utf-8")
    engine_texts.cache_clear()
    assert engine_texts(ids, b"k" * 16) == marked  # read back, not made again
    kept[0].write_text('{"wheat.reference": 1}', encoding="utf-8")
    engine_texts.cache_clear()
    assert engine_texts(ids, b"k" * 16) == made
    engine_texts.cache_clear()


def test_no_method_of_a_disguised_engine_has_a_public_engines_bytecode() -> None:
    def methods(text: str) -> dict[str, bytes]:
        space: dict[str, object] = {}
        exec(compile(text, "<engine>", "exec"), space)
        cls = space["Value"]
        found = {}
        for name, member in vars(cls).items():
            function = getattr(member, "__func__", member)
            if hasattr(function, "__code__"):
                found[name] = function.__code__.co_code
        return found

    public = {w.id: methods(w.text) for w in wheats()}
    for engine in disguised((*wheats(), *chaffs([STEP5, FORCED_FAIL])), b"k" * 16):
        mine = methods(engine.text)
        known = {code for table in public.values() for code in table.values()}
        assert not (set(mine.values()) & known), engine.id

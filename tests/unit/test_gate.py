"""The correct class in place of the student's: the run that tells checks from noise."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.judge.expected import REFERENCE
from grader.reference_class import correct_class
from sandbox.harness.mutation.gate import NoGate, with_reference

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


def run(text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "autograd_lab.py"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)


def test_the_reference_text_is_the_class_and_its_imports_only() -> None:
    text = correct_class()
    assert text.startswith("import math\n") and "class Value" in text
    assert "Callable" not in text and "Union" not in text  # annotations dropped: nothing to import for them
    assert "def main" not in text and "check_" not in text  # no checks, no input, no expected value


def test_a_wrong_engine_gets_the_correct_class_in_its_place(tmp_path: Path) -> None:
    student = textwrap.dedent(
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
    assert run(student, tmp_path).returncode != 0  # the student's engine is wrong: the check fails
    class_line = student.splitlines().index("class Scalar:") + 1
    gated = with_reference(student, "autograd_lab.py", "Scalar", class_line, correct_class())
    done = run(gated, tmp_path)
    assert done.returncode == 0 and "ok kept" in done.stdout, done.stderr
    assert "dataclass" not in gated.split("def helper")[1]  # the decorator went with the class


def test_checks_of_the_reference_pass_on_the_gate(tmp_path: Path) -> None:
    source = REFERENCE.read_text(encoding="utf-8")
    line = source.splitlines().index("class Value:") + 1
    gated = with_reference(source, "autograd_lab.py", "Value", line, correct_class())
    assert run(gated, tmp_path).returncode == 0


def test_no_class_at_that_line_is_no_gate() -> None:
    with pytest.raises(NoGate):
        with_reference("x = 1\n", "autograd_lab.py", "Value", 1, correct_class())

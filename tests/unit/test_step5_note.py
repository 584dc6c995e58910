"""The Step-5 note: found at the top of the file, in a docstring or comments, never executed."""

from __future__ import annotations

import pytest

from grader.judge.step5_note import find_note

ENGINE = "import math\n\n\nclass Value:\n    pass\n"


@pytest.mark.parametrize(
    "header",
    [
        '"""Step 5: with = instead of += in __mul__, x*x + x FAILS (3.0, not 7.0);\n(a+a)*a still PASSES (8.0)."""\n',
        "# step 5: changed += to = and one reuse check came out different (x.grad),\n"
        "# the part 1 test was still fine.\n",
        "#!/usr/bin/env python3\n# Bug injection: AssertionError on y = x*x + x; c = (a+a)*a still gives 8.0\n",
    ],
)
def test_complete_notes_are_found(header: str) -> None:
    note = find_note(header + ENGINE)
    assert note.complete, note
    assert note.lines[0] >= 1 and note.lines[1] >= note.lines[0]
    assert note.summary().startswith("Step-5 note found") and "does not" not in note.summary()


def test_a_one_sided_note_says_what_is_missing() -> None:
    note = find_note("# Step 5: with = in __mul__, x*x + x fails (3.0 instead of 7.0)\n" + ENGINE)
    assert note.found and note.failing and not note.passing and not note.complete
    assert note.summary() == (
        "Step-5 note found (lines 1-1): it describes a failing assertion; it does not describe a passing assertion."
    )


@pytest.mark.parametrize(
    "source",
    [
        ENGINE,
        '"""My autograd engine."""\n' + ENGINE,
        # A note below the class is not "at the top of the file".
        ENGINE + "\n# step 5: with = instead of += the reuse check fails, part 1 still passes\n",
    ],
)
def test_missing_notes_are_reported(source: str) -> None:
    note = find_note(source)
    assert not note.found and not note.complete
    assert note.summary().startswith("No Step-5 note found")


def test_a_file_that_does_not_tokenize_still_gets_an_answer() -> None:
    note = find_note('# step 5: += to = made x*x + x fail, part 1 passed\nx = "unterminated\n')
    assert note.found and note.complete
    assert not find_note('x = """never closed\n').found

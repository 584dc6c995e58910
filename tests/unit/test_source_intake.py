"""Bytes that cannot be graded as Python text get a sentence, never an exception."""

from __future__ import annotations

import pytest

from grader.intake.source import source_problem

GOOD = b"class Value:\n    pass\n"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"# coding: undefined\n" + GOOD, "not readable Python text"),  # a codec that refuses every text
        (b"# coding: punycode\n" + GOOD, "not readable Python text"),
        (b"# coding: no-such-codec\n" + GOOD, "not readable Python text"),
        (b"x = '\xff'\n", "not readable Python text"),
        (b"x = 1\x00\n", "NUL bytes"),
        (GOOD * 1000, "KiB limit"),
    ],
)
def test_unreadable_bytes_are_named_not_raised(raw: bytes, said: str) -> None:
    assert said in source_problem(raw, "autograd_lab.py", 4096)


def test_readable_text_has_no_problem() -> None:
    assert source_problem(GOOD, "autograd_lab.py", 4096) == ""
    assert source_problem(b"# coding: latin-1\nx = '\xe9'\n", "autograd_lab.py", 4096) == ""

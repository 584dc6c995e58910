"""The lines shown around the place a file failed to load."""

from __future__ import annotations

from grader.judge.excerpt import MAX_WIDTH, source_excerpt

TEXT = "a = 1\nb = 2\nc = (3\nd = 4\n"


def test_the_line_its_neighbours_and_a_caret() -> None:
    assert source_excerpt(TEXT, 3, 5).splitlines() == ["2 | b = 2", "3 | c = (3", "  |     ^", "4 | d = 4"]


def test_first_and_last_lines_have_one_neighbour() -> None:
    assert source_excerpt(TEXT, 1, None).splitlines() == ["1 | a = 1", "2 | b = 2"]
    assert source_excerpt(TEXT, 4, None).splitlines() == ["3 | c = (3", "4 | d = 4"]


def test_numbers_line_up_across_a_width_change() -> None:
    text = "".join(f"x{n} = {n}\n" for n in range(1, 11))
    assert source_excerpt(text, 9, 1).splitlines() == [" 8 | x8 = 8", " 9 | x9 = 9", "   | ^", "10 | x10 = 10"]


def test_tabs_are_expanded_and_the_caret_follows_them() -> None:
    excerpt = source_excerpt("def f():\n\treturn (1\n", 2, 9)
    assert excerpt.splitlines()[1:3] == ["2 |     return (1", "  |            ^"]


def test_a_line_or_column_the_file_does_not_have_gives_no_excerpt_or_caret() -> None:
    # Both come from the sandbox: a hostile one may send anything.
    assert source_excerpt(TEXT, 0, 1) == ""
    assert source_excerpt(TEXT, 99, 1) == ""
    assert source_excerpt(TEXT, None, 1) == ""
    assert "^" not in source_excerpt(TEXT, 2, 400)
    assert "^" not in source_excerpt(TEXT, 2, -3)


def test_a_long_line_is_cut_around_the_caret() -> None:
    line = "x = " + "1 + " * 200 + "(\n"
    excerpt = source_excerpt(line, 1, len(line) - 1).splitlines()
    assert len(excerpt[0]) <= MAX_WIDTH + 10 and excerpt[0].startswith("1 | ...")
    caret = excerpt[1].index("^")
    assert excerpt[0][caret] == "("

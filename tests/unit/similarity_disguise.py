"""Disguise a copied engine the way a student hiding a copy would: rename locals and arguments,
drop the comments and write new ones, put the methods in another order, add dead code. The
result is still the same program (the tests compile it and run it)."""

from __future__ import annotations

import ast
import io
import random
import tokenize

NEW_COMMENTS = (
    "# work out the result first",
    "# keep track of where this came from",
    "# chain rule: multiply by the upstream gradient",
    "# TODO tidy this up before submitting",
    "# see lecture notes",
    "# this part took me a while",
)

DEAD_CODE = '''

def _debug_dump(nodes, depth=0):
    """Print a graph (left in from debugging)."""
    seen_ids = []
    for item in nodes:
        if id(item) in seen_ids:
            continue
        seen_ids.append(id(item))
        print("  " * depth, item)
    return len(seen_ids)


def _unused_numeric_helper(values, scale=1.0):
    total = 0.0
    for k, v in enumerate(values):
        if k % 2 == 0:
            total += v * scale
        else:
            total -= v / (scale + 1.0)
    return total
'''


def _locals_and_args(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                names.add(arg.arg)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    names.add(inner.id)
    keep = {"self", "cls"}
    # A name also used as a keyword argument, in an f-string or bound at module level keeps its spelling.
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg:
            keep.add(node.arg)
        if isinstance(node, ast.ClassDef):  # class attributes (dataclass fields) are read as attributes
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else None
                targets = item.targets if isinstance(item, ast.Assign) else [target] if target else []
                keep.update(t.id for t in targets if isinstance(t, ast.Name))
        if isinstance(node, ast.JoinedStr):  # inside an f-string the name is part of a string token
            keep.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    for stmt in tree.body:
        for target in ast.walk(stmt) if isinstance(stmt, ast.Assign | ast.Import | ast.ImportFrom) else ():
            if isinstance(target, ast.Name):
                keep.add(target.id)
            if isinstance(target, ast.alias):
                keep.add((target.asname or target.name).split(".")[0])
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            keep.add(stmt.name)
    return names - keep


def _reorder_methods(source: str, rng: random.Random) -> str:
    """Shuffle each class's methods (``__init__`` stays first), moving whole line ranges."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for cls in sorted((n for n in tree.body if isinstance(n, ast.ClassDef)), key=lambda n: -n.lineno):
        methods = [m for m in cls.body if isinstance(m, ast.FunctionDef)]
        if len(methods) < 3 or methods != cls.body[-len(methods) :]:
            continue  # only a class whose body ends with its methods, so ranges are contiguous
        starts = [min([m.lineno, *(d.lineno for d in m.decorator_list)]) - 1 for m in methods]
        spans = list(zip(starts, [*starts[1:], cls.end_lineno or 0], strict=True))
        blocks = ["".join(lines[a:b]) for a, b in spans]
        blocks = [b if b.endswith("\n") else b + "\n" for b in blocks]
        first = [b for b, m in zip(blocks, methods, strict=True) if m.name == "__init__"]
        rest = [b for b, m in zip(blocks, methods, strict=True) if m.name != "__init__"]
        rng.shuffle(rest)
        lines[spans[0][0] : spans[-1][1]] = [*first, *rest]
    return "".join(lines)


def _rename_and_strip(source: str, rng: random.Random) -> str:
    names = sorted(_locals_and_args(ast.parse(source)))
    fresh = {name: f"{rng.choice('pqrstuvw')}{i}_{rng.randrange(100)}" for i, name in enumerate(names)}
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # line, start col, end col, new text
    previous = None
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string in fresh and not (previous and previous.string == "."):
            edits.append((tok.start[0], tok.start[1], tok.end[1], fresh[tok.string]))
        elif tok.type == tokenize.COMMENT:
            edits.append((tok.start[0], tok.start[1], tok.end[1], ""))
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok
    for line, start, end, text in sorted(edits, reverse=True):
        row = lines[line - 1]
        lines[line - 1] = row[:start] + text + row[end:]
    return "".join(line if line.strip() or not line.endswith("\n") else "\n" for line in lines)


def _new_comments(source: str, rng: random.Random) -> str:
    out = []
    rows = source.splitlines(keepends=True)
    inside_string = _string_rows(source)
    for number, row in enumerate(rows, start=1):
        stripped = row.lstrip()
        if stripped and number not in inside_string and rng.random() < 0.12 and not stripped.startswith(")"):
            out.append(row[: len(row) - len(stripped)] + rng.choice(NEW_COMMENTS) + "\n")
        out.append(row)
    return "".join(out)


def _string_rows(source: str) -> set[int]:
    """Lines inside a multi-line string or bracket, where a comment line would change the code."""
    rows: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.start[0] != tok.end[0]:
            rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.NL and depth:
            rows.add(tok.start[0] + 1)
    return rows


def disguise(source: str, seed: int) -> str:
    rng = random.Random(seed)
    text = _reorder_methods(source, rng)
    text = _rename_and_strip(text, rng)
    text = _new_comments(text, rng)
    main_guard = text.find('\nif __name__ == "__main__":')
    if main_guard == -1:
        return text + DEAD_CODE
    return text[:main_guard] + DEAD_CODE + text[main_guard:]

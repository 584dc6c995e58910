"""Copies of an engine disguised by machine, one way at a time or all at once, each still the
same program (the tests run them).

- ``rename``: every name the file binds (functions, classes, arguments, locals, module names)
  gets a fresh spelling, consistently; the lab's API (``Value``, its fields and methods, the
  dunders), imports, builtins and keyword-argument names keep theirs, as they must to run.
- ``reorder``: the methods of each class and each run of top-level functions are shuffled
  (``__init__`` stays first); whole line ranges move, so nothing else changes.
- ``unparse``: ``ast.unparse``, which drops comments and rewrites every line.
- ``black_style``: ``unparse``, then double quotes, blank lines as black puts them, and any line
  past 88 columns split one argument a line with a trailing comma.
- ``wrap40``: every line past 40 columns split after each comma and opening bracket inside
  brackets.
- ``pad``: dead code (unused helpers, an unused method, unused locals, ``if False:`` branches)
  and new comments.
- ``everything``: rename, reorder, pad, then black_style or wrap40.
- ``reflect``: every attribute read, write and delete spelled with ``getattr``, ``setattr``
  and ``delattr`` and a literal name (``x.grad += g`` becomes
  ``setattr(x, "grad", getattr(x, "grad") + g)``), then ``unparse``.
- ``restructure``: behaviour kept, structure changed: ``x += y`` on an attribute becomes
  ``x = x + y``, ``for`` loops that append become comprehensions, ``reversed(xs)`` becomes
  ``xs[::-1]``.
"""

from __future__ import annotations

import ast
import builtins
import io
import random
import re
import tokenize
from collections.abc import Callable

from similarity_disguise import DEAD_CODE, NEW_COMMENTS

API = frozenset(
    {"Value", "data", "grad", "_prev", "_op", "_backward", "backward", "relu", "tanh", "exp", "log", "sigmoid"}
)
# The padding the older disguiser adds, so both classes of copies carry the same dead code.
COMMENTS = NEW_COMMENTS
DEAD_HELPERS = DEAD_CODE
DEAD_METHOD = """
    def _describe(self):
        parts = [str(self.data)]
        if self.grad:
            parts.append("grad=" + str(self.grad))
        return " ".join(parts)
"""


# --- rename -----------------------------------------------------------------------------------


def _bound_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    keep = set(API) | set(dir(builtins)) | {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg:
            keep.add(node.arg)  # a keyword argument may name another library's parameter
        elif isinstance(node, ast.JoinedStr):  # in 3.11 an f-string is one token: leave its names
            keep.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
        elif isinstance(node, ast.alias):
            keep.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ClassDef):  # class attributes are read as attributes
            for item in node.body:
                if isinstance(item, ast.AnnAssign | ast.Assign):
                    targets = [item.target] if isinstance(item, ast.AnnAssign) else item.targets
                    keep.update(t.id for t in targets if isinstance(t, ast.Name))
                if isinstance(item, ast.FunctionDef):
                    keep.add(item.name)  # a method is found as an attribute
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            keep.update(re.findall(r"[A-Za-z_]\w*", node.value))  # getattr(Value, "_grad_" + op)
    return {n for n in names - keep if not n.startswith("__")}


def rename(source: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    fresh = {
        name: f"{rng.choice('pqrstuvw')}{i}_{rng.randrange(100)}"
        for i, name in enumerate(sorted(_bound_names(ast.parse(source))))
    }
    lines = source.splitlines(keepends=True)
    edits = []
    previous = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in fresh and not (previous and previous.string == "."):
            edits.append((tok.start[0], tok.start[1], tok.end[1], fresh[tok.string]))
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok
    for line, start, end, text in sorted(edits, reverse=True):
        lines[line - 1] = lines[line - 1][:start] + text + lines[line - 1][end:]
    return "".join(lines)


# --- reorder ----------------------------------------------------------------------------------


def _shuffle_runs(body: list[ast.stmt], lines: list[str], rng: random.Random, end: int) -> None:
    """Shuffle each run of consecutive function definitions in ``body`` (whose last statement
    ends at line ``end``), moving whole line ranges; ``__init__`` stays first."""
    starts = [min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", []))]) - 1 for s in body]
    stops = [*starts[1:], end]
    run: list[int] = []
    for i, stmt in enumerate([*body, None]):
        if isinstance(stmt, ast.FunctionDef):
            run.append(i)
            continue
        if len(run) >= 2:
            blocks = ["".join(lines[starts[j] : stops[j]]) for j in run]
            blocks = [b if b.endswith("\n") else b + "\n" for b in blocks]
            fixed = [b for j, b in zip(run, blocks, strict=True) if body[j].name == "__init__"]  # type: ignore[attr-defined]
            moving = [b for j, b in zip(run, blocks, strict=True) if body[j].name != "__init__"]  # type: ignore[attr-defined]
            rng.shuffle(moving)
            lines[starts[run[0]]] = "".join([*fixed, *moving])
            for k in range(starts[run[0]] + 1, stops[run[-1]]):
                lines[k] = ""
        run = []


def reorder(source: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        _shuffle_runs(cls.body, lines, rng, cls.end_lineno or len(lines))
    top = tree.body
    _shuffle_runs(top, lines, rng, len(lines))
    return "".join(lines)


# --- layout -----------------------------------------------------------------------------------


def unparse(source: str, seed: int = 0) -> str:
    return ast.unparse(ast.parse(source)) + "\n"


def _double_quotes(source: str) -> str:
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        text = tok.string
        if tok.type == tokenize.STRING and re.fullmatch(r"[rRbBuUfF]{0,2}'[^'\"\\]*'", text):
            text = text.replace("'", '"')
        out.append((tok.type, text))
    return tokenize.untokenize(out)


def _brackets(source: str) -> dict[int, list[tuple[str, int, int]]]:
    """Per line: its bracket and comma tokens (text, column after it, depth after it)."""
    found: dict[int, list[tuple[str, int, int]]] = {}
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.OP or tok.string not in "()[]{},":
            continue
        depth += 1 if tok.string in "([{" else -1 if tok.string in ")]}" else 0
        found.setdefault(tok.start[0], []).append((tok.string, tok.end[1], depth))
    return found


def _split_long(line: str, marks: list[tuple[str, int, int]], width: int) -> str:
    """A line past ``width`` as black writes it: the outermost bracket that closes on the line
    holds one item a line with a trailing comma (only where it already has a comma, so no
    parenthesised expression becomes a tuple)."""
    if len(line) <= width or not marks:
        return line
    base = min(d for _, _, d in marks) - 1  # the depth the line starts at
    if base != 0:
        return line
    opened = next((m for m in marks if m[0] in "([{" and m[2] == 1), None)
    if opened is None:
        return line
    rest = marks[marks.index(opened) + 1 :]
    close = next((m for m in rest if m[0] in ")]}" and m[2] == 0), None)
    commas = [m[1] for m in rest if m[0] == "," and m[2] == 1 and (close is None or m[1] < close[1])]
    if close is None or not commas:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    cuts = [opened[1], *commas, close[1] - 1]
    items = [line[a:b].strip().rstrip(",").strip() for a, b in zip(cuts, cuts[1:], strict=False)]
    body = "".join(f"{indent}    {item},\n" for item in items if item)
    return f"{line[: opened[1]]}\n{body}{indent}{line[close[1] - 1 :]}"


def black_style(source: str, seed: int = 0) -> str:
    text = _double_quotes(unparse(source))
    marks = _brackets(text)
    out: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        top = line == stripped
        if (
            stripped.startswith(("def ", "class ", "@"))
            and out
            and out[-1].strip()
            and not out[-1].lstrip().startswith("@")
        ):
            out.extend([""] * (2 if top else 1))
        elif top and stripped and out and out[-1].startswith((" ", "\t")):
            out.extend(["", ""])  # after a top-level definition ends
        out.append(_split_long(line, marks.get(number, []), 88))
    return "\n".join(out)


def wrap40(source: str, seed: int = 0) -> str:
    """Each line past 40 columns broken after commas and opening brackets inside brackets,
    where the piece so far is long enough; inside brackets a line break is only layout."""
    marks = _brackets(source)
    out = []
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        if len(line.rstrip("\n")) <= 40:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())] + "        "
        pieces, last = [], 0
        for text, col, depth in marks.get(number, []):
            if text in ",([{" and depth >= 1 and col - last >= 16 and line[col:].strip():
                pieces.append(line[last:col])
                last = col
        pieces.append(line[last:])
        out.append(("\n" + indent).join(p if i == 0 else p.lstrip() for i, p in enumerate(pieces)))
    return "".join(out)


# --- padding ----------------------------------------------------------------------------------


def _string_rows(source: str) -> set[int]:
    """Lines inside a multi-line string, a bracket or a backslash continuation, where a new line
    would change the code."""
    rows: set[int] = set()
    depth = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.start[0] != tok.end[0]:
            rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.NL and depth:
            rows.add(tok.start[0] + 1)
    for number, line in enumerate(source.splitlines(), start=1):
        if line.endswith("\\"):  # a backslash continues the statement on the next line
            rows.add(number + 1)
    return rows


def pad(source: str, seed: int = 0) -> str:
    rng = random.Random(seed)
    tree = ast.parse(source)
    rows = source.splitlines(keepends=True)
    inside = _string_rows(source)
    first_body = {  # a function's first statement, on a line of its own and not a docstring
        f.body[0].lineno
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef)
        and f.body[0].lineno > f.lineno
        and not (isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant))
    }
    out = []
    for number, row in enumerate(rows, start=1):
        stripped = row.lstrip()
        indent = row[: len(row) - len(stripped)]
        if stripped and number not in inside and not stripped.startswith((")", "]", "}")):
            if number in first_body and rng.random() < 0.3:
                out.append(f"{indent}_unused_{number} = None\n")  # a dead local
            elif number in first_body and rng.random() < 0.2:
                out.append(f'{indent}if False:\n{indent}    print("debug", {number})\n')  # a dead branch
            if rng.random() < 0.12:
                out.append(indent + rng.choice(COMMENTS) + "\n")
        out.append(row)
    text = "".join(out)
    classes = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "Value"]
    if classes:
        at = classes[0].end_lineno or 0
        lines = text.splitlines(keepends=True)
        lines.insert(at, DEAD_METHOD)
        text = "".join(lines)
    guard = text.find('\nif __name__ == "__main__":')
    return text + DEAD_HELPERS if guard < 0 else text[:guard] + DEAD_HELPERS + text[guard:]


def everything(source: str, seed: int = 0) -> str:
    text = pad(reorder(rename(source, seed), seed), seed)
    return black_style(text) if seed % 2 else wrap40(unparse(text))


# --- reflect --------------------------------------------------------------------------------------


def _literal_name(attr: str) -> bool:
    """Whether ``attr`` means the same through getattr: a private name is mangled only when
    written as an attribute."""
    return not (attr.startswith("__") and not attr.endswith("__"))


def _get(node: ast.Attribute) -> ast.Call:
    return ast.Call(ast.Name("getattr", ast.Load()), [node.value, ast.Constant(node.attr)], [])


class _Reflect(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load) and _literal_name(node.attr):
            return ast.copy_location(_get(node), node)
        return node

    def _set(self, target: ast.Attribute, value: ast.expr, at: ast.stmt) -> ast.stmt:
        call = ast.Call(ast.Name("setattr", ast.Load()), [target.value, ast.Constant(target.attr), value], [])
        return ast.copy_location(ast.Expr(call), at)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, ast.Attribute) and _literal_name(target.attr):
            return self._set(target, node.value, node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.generic_visit(node)
        target = node.target
        if isinstance(target, ast.Attribute) and node.value is not None and _literal_name(target.attr):
            return self._set(target, node.value, node)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        target = node.target
        if isinstance(target, ast.Attribute) and _literal_name(target.attr):
            return self._set(target, ast.BinOp(_get(target), node.op, node.value), node)
        return node

    def visit_Delete(self, node: ast.Delete) -> ast.AST:
        self.generic_visit(node)
        target = node.targets[0]
        if len(node.targets) == 1 and isinstance(target, ast.Attribute) and _literal_name(target.attr):
            call = ast.Call(ast.Name("delattr", ast.Load()), [target.value, ast.Constant(target.attr)], [])
            return ast.copy_location(ast.Expr(call), node)
        return node


def reflect(source: str, seed: int = 0) -> str:
    tree = _Reflect().visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# --- restructure --------------------------------------------------------------------------------


class _Restructure(ast.NodeTransformer):
    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.target, ast.Attribute):
            load = ast.Attribute(value=node.target.value, attr=node.target.attr, ctx=ast.Load())
            return ast.copy_location(
                ast.Assign(targets=[node.target], value=ast.BinOp(load, node.op, node.value)), node
            )
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "reversed" and len(node.args) == 1 and not node.keywords:
            whole = ast.Subscript(
                value=ast.Call(ast.Name("list", ast.Load()), [node.args[0]], []),
                slice=ast.Slice(None, None, ast.Constant(-1)),
                ctx=ast.Load(),
            )
            return ast.copy_location(whole, node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        body = node.body
        if (
            not node.orelse
            and len(body) == 1
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Call)
            and isinstance(body[0].value.func, ast.Attribute)
            and body[0].value.func.attr == "append"
            and len(body[0].value.args) == 1
        ):
            call = body[0].value
            comp = ast.ListComp(call.args[0], [ast.comprehension(node.target, node.iter, [], 0)])
            extend = ast.Attribute(value=call.func.value, attr="extend", ctx=ast.Load())  # type: ignore[attr-defined]
            return ast.copy_location(ast.Expr(ast.Call(extend, [comp], [])), node)
        return node


def restructure(source: str, seed: int = 0) -> str:
    tree = _Restructure().visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


DISGUISES: dict[str, Callable[[str, int], str]] = {
    "rename": rename,
    "reorder": reorder,
    "unparse": unparse,
    "black_style": black_style,
    "wrap40": wrap40,
    "pad": pad,
    "everything": everything,
    "reflect": reflect,
}

"""Attribute access spelled another way, read as the plain access it is.

``getattr(x, "grad")`` does what ``x.grad`` does, but its tree is a call holding a string, so a
copy that spells every attribute access that way shares few runs of tokens with its original.
Before a tree becomes tokens, each of these spellings with a literal name that is an
identifier becomes the plain access (a name computed at run time stays a call):

- reads: ``getattr(x, "a")`` (also with a literal default), ``object.__getattribute__(x, "a")``,
  ``x.__getattribute__("a")``, ``operator.attrgetter("a.b")(x)``, ``vars(x)["a"]`` and
  ``x.__dict__["a"]`` (the last two also as targets);
- statements: ``setattr(x, "a", v)`` is ``x.a = v`` and ``delattr(x, "a")`` is ``del x.a``,
  also as ``object.__setattr__(x, "a", v)`` or ``x.__setattr__("a", v)`` and the like.

Then ``t = t <op> v`` becomes ``t <op>= v``: setattr has no augmented form, so ``x.grad += g``
can only be spelled ``setattr(x, "grad", getattr(x, "grad") + g)``.
The walks are iterative, as the tokens' own: a deep tree cannot exhaust the stack.
"""

from __future__ import annotations

import ast
import keyword

_TARGETS = (ast.Name, ast.Attribute, ast.Subscript)


def _called(node: ast.expr, name: str, module: str = "builtins") -> bool:
    """``name``, or ``name`` taken from its module: ``getattr``, ``builtins.getattr``."""
    if isinstance(node, ast.Name):
        return node.id == name
    return (
        isinstance(node, ast.Attribute)
        and node.attr == name
        and isinstance(node.value, ast.Name)
        and node.value.id == module
    )


def _object_method(func: ast.expr, name: str) -> bool:
    return isinstance(func, ast.Attribute) and func.attr == name and _called(func.value, "object")


def _identifier(name: str) -> bool:
    """Whether ``x.<name>`` could be written."""
    return name.isidentifier() and not keyword.iskeyword(name)


def _literal(node: ast.expr) -> str | None:
    """The name a literal string spells, if ``x.<name>`` could be written for it."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    return node.value if _identifier(node.value) else None


def _plain_call(node: ast.expr) -> ast.Call | None:
    """``node`` as a call with positional arguments only, none of them starred."""
    if not isinstance(node, ast.Call) or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    return node


def _attribute(owner: ast.expr, name: str, ctx: ast.expr_context, where: ast.AST) -> ast.Attribute:
    return ast.copy_location(ast.Attribute(value=owner, attr=name, ctx=ctx), where)


def _read(node: ast.expr) -> ast.expr | None:
    """The plain attribute access ``node`` spells another way, else None."""
    if isinstance(node, ast.Subscript):
        mapping = node.value
        name = _literal(node.slice)
        if name is None:
            return None
        if isinstance(mapping, ast.Attribute) and mapping.attr == "__dict__":
            return _attribute(mapping.value, name, node.ctx, node)
        call = _plain_call(mapping)
        if call is not None and _called(call.func, "vars") and len(call.args) == 1:
            return _attribute(call.args[0], name, node.ctx, node)
        return None
    call = _plain_call(node)
    if call is None:
        return None
    func, args = call.func, call.args
    if _called(func, "getattr") and (len(args) == 2 or len(args) == 3 and isinstance(args[2], ast.Constant)):
        owner, name = args[0], _literal(args[1])  # a literal default costs a copier nothing to add
    elif _object_method(func, "__getattribute__") and len(args) == 2:
        owner, name = args[0], _literal(args[1])
    elif isinstance(func, ast.Attribute) and func.attr == "__getattribute__" and len(args) == 1:
        owner, name = func.value, _literal(args[0])
    else:
        getter = _plain_call(func)
        if not (getter and _called(getter.func, "attrgetter", "operator") and len(getter.args) == 1 and len(args) == 1):
            return None
        dotted = getter.args[0]
        names = dotted.value.split(".") if isinstance(dotted, ast.Constant) and isinstance(dotted.value, str) else []
        if not names or not all(_identifier(n) for n in names):
            return None
        found: ast.expr = args[0]
        for part in names:  # attrgetter("a.b")(x) is x.a.b
            found = _attribute(found, part, ast.Load(), node)
        return found
    return None if name is None else _attribute(owner, name, ast.Load(), node)


def _statement(node: ast.stmt) -> ast.stmt | None:
    """The assignment or deletion a ``setattr``-like call statement spells, else None."""
    call = _plain_call(node.value) if isinstance(node, ast.Expr) else None
    if call is None:
        return None
    func, args = call.func, call.args
    value: ast.expr | None
    if (_called(func, "setattr") or _object_method(func, "__setattr__")) and len(args) == 3:
        owner, named, value = args
    elif isinstance(func, ast.Attribute) and func.attr == "__setattr__" and len(args) == 2:
        owner, (named, value) = func.value, args
    elif (_called(func, "delattr") or _object_method(func, "__delattr__")) and len(args) == 2:
        owner, named, value = args[0], args[1], None
    elif isinstance(func, ast.Attribute) and func.attr == "__delattr__" and len(args) == 1:
        owner, named, value = func.value, args[0], None
    else:
        return None
    name = _literal(named)
    if name is None:
        return None
    # The target's text is the call up to its name: `setattr(x, "grad"`.
    target = ast.Attribute(value=owner, attr=name, ctx=ast.Del() if value is None else ast.Store())
    ast.copy_location(target, call)
    target.end_lineno, target.end_col_offset = named.end_lineno, named.end_col_offset
    replaced: ast.stmt = ast.Delete(targets=[target]) if value is None else ast.Assign(targets=[target], value=value)
    return ast.copy_location(replaced, node)


def _same(one: ast.AST, other: ast.AST) -> bool:
    """Whether two trees are the same code, loaded or stored alike."""
    pairs = [(one, other)]
    while pairs:
        a, b = pairs.pop()
        if type(a) is not type(b):
            return False
        for (field, x), (_, y) in zip(ast.iter_fields(a), ast.iter_fields(b), strict=True):
            if field == "ctx":
                continue
            xs, ys = (x, y) if isinstance(x, list) and isinstance(y, list) else ([x], [y])
            if len(xs) != len(ys):
                return False
            for u, v in zip(xs, ys, strict=True):
                if isinstance(u, ast.AST) and isinstance(v, ast.AST):
                    pairs.append((u, v))
                elif isinstance(u, ast.AST) or isinstance(v, ast.AST) or u != v:
                    return False
    return True


def _augmented(node: ast.stmt) -> ast.stmt:
    """``t = t <op> v`` as ``t <op>= v``."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.value, ast.BinOp):
        return node
    target, value = node.targets[0], node.value
    if not isinstance(target, _TARGETS) or not _same(target, value.left):
        return node
    return ast.copy_location(ast.AugAssign(target=target, op=value.op, value=value.right), node)


def _rewritten(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.expr):
        return _read(node) or node
    if isinstance(node, ast.stmt):
        return _statement(node) or node
    return node


def plain_attributes(tree: ast.AST) -> None:
    """Rewrite ``tree`` in place: attribute access spelled another way becomes plain."""
    stack = [tree]
    bodies: list[list[ast.stmt]] = []
    while stack:
        node = stack.pop()
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                new = _rewritten(value)
                setattr(node, field, new)
                stack.append(new)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        value[i] = _rewritten(item)
                        stack.append(value[i])
                if value and isinstance(value[0], ast.stmt):
                    bodies.append(value)
    # After every child is plain, so `x.grad = x.grad + g` is seen in any of its spellings.
    for body in bodies:
        body[:] = [_augmented(item) for item in body]

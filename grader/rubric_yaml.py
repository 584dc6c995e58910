"""The positioned YAML reader under the rubric loader.

A ``Node`` wraps one composed YAML node with its key path and source position, so each
accessor (mapping, sequence, text, number, ...) can reject a wrong shape or an unknown key
with ``file:line:column: key.path`` and a suggestion. It knows nothing about rubrics:
``grader.rubric`` builds its dataclasses on top of it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import yaml

from .errors import RubricError

T = TypeVar("T")


# --- YAML with positions ----------------------------------------------------------------


class Node:
    """A YAML value with its path and position, for error messages."""

    def __init__(self, node: yaml.Node, path: str, source: str):
        self.node, self.path, self.source = node, path, source

    def where(self) -> str:
        mark = self.node.start_mark
        return f"{self.source}:{mark.line + 1}:{mark.column + 1}: {self.path or '<top>'}"

    def fail(self, message: str) -> RubricError:
        return RubricError(message, where=self.where())

    def child(self, node: yaml.Node, suffix: str) -> Node:
        joined = f"{self.path}.{suffix}" if self.path and not suffix.startswith("[") else f"{self.path}{suffix}"
        return Node(node, joined, self.source)

    def mapping(self, allowed: Sequence[str], required: Sequence[str] = ()) -> dict[str, Node]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail("expected a mapping")
        out: dict[str, Node] = {}
        for key_node, value_node in self.node.value:
            key = key_node.value
            if key not in allowed:
                near = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (allowed: {', '.join(allowed)})"
                raise Node(key_node, f"{self.path}.{key}" if self.path else str(key), self.source).fail(
                    f"unknown key '{key}'{hint}"
                )
            if key in out:
                raise self.child(key_node, key).fail("duplicate key")
            out[key] = self.child(value_node, key)
        missing = [k for k in required if k not in out]
        if missing:
            raise self.fail(f"missing required key(s): {', '.join(missing)}")
        return out

    def items(self) -> list[tuple[str, Node]]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.fail("expected a mapping")
        return [(k.value, self.child(v, str(k.value))) for k, v in self.node.value]

    def sequence(self) -> list[Node]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.fail("expected a list")
        return [self.child(v, f"[{i}]") for i, v in enumerate(self.node.value)]

    def scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.fail("expected a single value")
        # The safe loader's own constructor, on the node already composed (it has its tag): no
        # second trip through the text per value.
        return yaml.constructor.SafeConstructor().construct_object(self.node, deep=True)

    def text(self) -> str:
        value = self.scalar()
        if not isinstance(value, str):
            raise self.fail(f"expected text, got {value!r}")
        return value

    def number(self, minimum: float | None = None) -> float:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"expected a number, got {value!r}")
        if not math.isfinite(value):
            raise self.fail(f"expected a finite number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.fail(f"must be at least {minimum:g}, got {value!r}")
        return float(value)

    def integer(self, minimum: int = 0) -> int:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"expected a whole number >= {minimum}, got {value!r}")
        return value

    def choice(self, options: Sequence[str]) -> str:
        value = self.text()
        if value not in options:
            raise self.fail(f"'{value}' is not one of: {', '.join(options)}")
        return value

    def texts(self) -> tuple[str, ...]:
        return tuple(n.text() for n in self.sequence())


def get(fields: dict[str, Node], key: str, read: Callable[[Node], T], default: T) -> T:
    return read(fields[key]) if key in fields else default

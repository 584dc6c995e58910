"""Engines that lack one feature, made from the reference at test time.

Each is the reference with one feature taken out of the class, by a few exact text edits,
and the reference's own checks edited just enough to pass on it (as a student's checks would:
they ran them). A case folder holding ``expected.yaml`` with ``derived: <name>`` and no
``autograd_lab.py`` is graded on ``derive(<name>)``: such an engine must lose points only in
the checks that measure its missing feature (the rubric's ``features`` table).
"""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "autograd_lab.py"

Edit = tuple[str, str]  # (text that occurs exactly once in the reference, its replacement)


def _method(name: str, body: str) -> Edit:
    """Delete one method of the class (its def line and one-line body)."""
    return (f"    def {name}(self, other: Number) -> \"Value\":\n        {body}\n\n", "")


# A plain number on the right of + and *: the operations read other.data as given. Unary -
# and the reflected + and * wrap their number themselves, so only the feature is missing.
NUMBER: tuple[Edit, ...] = (
    ("        other = self._lift(other)\n        out = Value(self.data + other.data", "        out = Value(self.data + other.data"),
    ("        other = self._lift(other)\n        out = Value(self.data * other.data", "        out = Value(self.data * other.data"),
    ("        return self * -1.0\n", "        return self * Value(-1.0)\n"),
    ("        return self + other\n", "        return self + Value(other)\n"),
    ("        return self * other\n", "        return self * Value(other)\n"),
    ("        y = op(x) * x * 1.7\n", "        y = op(x) * x * Value(1.7)\n"),
    ("lambda v: v / (v + 1.0)", "lambda v: v / (v + Value(1.0))"),
    ("lambda v: 2.0 / (v + 1.0)", "lambda v: 2.0 / (v + Value(1.0))"),
)

# A missing operation; the checks drop the one case that uses it.
CASE = {
    "radd": '        ("2 + x", lambda v: 2.0 + v, lambda t: 2.0 + t, 0.8),\n',
    "rsub": '        ("2 - x", lambda v: 2.0 - v, lambda t: 2.0 - t, 0.8),\n',
    "rmul": '        ("3 * x", lambda v: 3.0 * v, lambda t: 3.0 * t, 0.8),\n',
    "rdiv": '        ("2 / (x + 1)", lambda v: 2.0 / (v + 1.0), lambda t: 2.0 / (t + 1.0), 0.8),\n',
    "sub": '        ("x - 0.25", lambda v: v - 0.25, lambda t: t - 0.25, 0.8),\n',
    "neg": '        ("-x", lambda v: -v, lambda t: -t, 0.9),\n',
    "div": '        ("x / (x + 1)", lambda v: v / (v + 1.0), lambda t: t / (t + 1.0), 0.6),\n',
}

TRANSFORMS: dict[str, tuple[Edit, ...]] = {
    "number": NUMBER,
    "radd": (_method("__radd__", "return self + other"), (CASE["radd"], "")),
    "rsub": (_method("__rsub__", "return Value(other) + (-self)"), (CASE["rsub"], "")),
    "rmul": (_method("__rmul__", "return self * other"), (CASE["rmul"], "")),
    "rdiv": (_method("__rtruediv__", "return Value(other) * self**-1.0"), (CASE["rdiv"], "")),
    "sub": (
        ('    def __sub__(self, other: "Value | Number") -> "Value":\n        return self + (-self._lift(other))\n\n', ""),
        (CASE["sub"], ""),
        ("(act - target) ** 2", "(act + -target) ** 2"),
        ("(z2.relu() - Value(1.0)) ** 2", "(z2.relu() + Value(-1.0)) ** 2"),
    ),
    "neg": (
        ('    def __neg__(self) -> "Value":\n        return self * -1.0\n\n', ""),
        ("        return self + (-self._lift(other))\n", "        return self + self._lift(other) * -1.0\n"),
        ("        return Value(other) + (-self)\n", "        return Value(other) + self * -1.0\n"),
        (CASE["neg"], ""),
    ),
    "div": (
        (
            '    def __truediv__(self, other: "Value | Number") -> "Value":\n'
            "        return self * self._lift(other) ** -1.0\n\n",
            "",
        ),
        (CASE["div"], ""),
    ),
    # ** takes int exponents only; the quotients use ** -1, an int.
    "float_exponent": (
        ("not isinstance(exponent, (int, float))", "not isinstance(exponent, int)"),
        ("self._lift(other) ** -1.0", "self._lift(other) ** -1"),
        ("self**-1.0", "self**-1"),
    ),
}


def derive(name: str) -> str:
    """The reference without feature ``name``; every edit must apply exactly once."""
    source = REFERENCE.read_text(encoding="utf-8")
    for old, new in TRANSFORMS[name]:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"{name}: {old!r} occurs {count} times in the reference, not once")
        source = source.replace(old, new)
    return source

"""Scalar reverse-mode autodiff (micrograd-ish).  I. Petrov."""
import math
import operator
import random


class Value:
    __slots__ = ("data", "grad", "_prev", "_op", "_back")

    def __init__(self, data, _prev=(), _op=""):
        self.data, self.grad = float(data), 0.0
        self._prev, self._op, self._back = tuple(_prev), _op, None

    def __repr__(self):
        return f"Value({self.data!r}, grad={self.grad!r}{', op=' + self._op if self._op else ''})"

    # identity semantics: two nodes are equal only if they are the same node
    def __eq__(self, other): return self is other
    def __hash__(self): return id(self)

    @staticmethod
    def _acc(node, g):
        node.grad += g

    def _binary(self, other, op, forward, d_self, d_other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(forward(self.data, other.data), (self, other), op)

        def back():
            a, b, y = self.data, other.data, out.data
            Value._acc(self, d_self(a, b, y) * out.grad)
            Value._acc(other, d_other(a, b, y) * out.grad)
        out._back = back
        return out

    def _unary(self, op, forward, d):
        out = Value(forward(self.data), (self,), op)
        out._back = lambda: Value._acc(self, d(self.data, out.data) * out.grad)
        return out

    def __add__(s, o):
        return s._binary(o, "+", operator.add, lambda a, b, y: 1.0, lambda a, b, y: 1.0)

    def __sub__(s, o):
        return s._binary(o, "-", operator.sub, lambda a, b, y: 1.0, lambda a, b, y: -1.0)

    def __mul__(s, o):
        return s._binary(o, "*", operator.mul, lambda a, b, y: b, lambda a, b, y: a)

    def __truediv__(s, o):
        return s._binary(o, "/", operator.truediv,
                         lambda a, b, y: 1.0 / b, lambda a, b, y: -a / (b * b))

    def __radd__(s, o): return Value(o) + s
    def __rsub__(s, o): return Value(o) - s
    def __rmul__(s, o): return Value(o) * s
    def __rtruediv__(s, o): return Value(o) / s

    def __pow__(s, k):
        if not isinstance(k, (int, float)):
            return NotImplemented
        return s._unary(f"**{k}", lambda a: a ** k, lambda a, y: k * a ** (k - 1))

    def __neg__(s): return s._unary("neg", operator.neg, lambda a, y: -1.0)
    def relu(s): return s._unary("relu", lambda a: max(a, 0.0), lambda a, y: float(a > 0))
    def tanh(s): return s._unary("tanh", math.tanh, lambda a, y: 1.0 - y * y)
    def exp(s): return s._unary("exp", math.exp, lambda a, y: y)
    def log(s): return s._unary("log", math.log, lambda a, y: 1.0 / a)

    def _topo(self):
        """Yield every node reachable from self, parents before children."""
        seen = set()

        def walk(v):
            if v in seen:
                return
            seen.add(v)
            for p in v._prev:
                yield from walk(p)
            yield v
        yield from walk(self)

    def backward(self):
        self.grad = 1.0
        for v in reversed([*self._topo()]):
            if v._back:
                v._back()


# ---------------------------------------------------------------- checks --
FAILED = []


def expect(actual, wanted, label, tol=1e-6):
    ok = actual == wanted if isinstance(wanted, bool) else abs(actual - wanted) <= tol
    print(f"[{'ok' if ok else 'FAIL'}] {label}: {actual!r} (wanted {wanted!r})")
    if not ok:
        FAILED.append(label)
    return ok


def reuse_grad():
    x = Value(3.0)
    (x * x + x).backward()
    return x.grad


FD_OPS = [  # (label, f, low, high) -- random points drawn from [low, high]
    ("mul/add", lambda x: x * x + 3 * x, -2.0, 2.0),
    ("sub/rsub", lambda x: 2 - x - x * x, -2.0, 2.0),
    ("div/rdiv", lambda x: x / 3 + 1 / x, 0.5, 2.0),
    ("pow", lambda x: x ** 3 + x ** 0.5, 0.2, 2.0),
    ("tanh", lambda x: (x * x).tanh(), -1.5, 1.5),
    ("exp/log", lambda x: x.exp().log() * (x + 1).log(), 0.1, 2.0),
    ("relu/neg", lambda x: (-x).relu() * x, -2.0, -0.1),
]


def fd_max_error(rng, points=5, h=1e-6):
    worst = {}
    for label, f, lo, hi in FD_OPS:
        for _ in range(points):
            x0 = rng.uniform(lo, hi)
            x = Value(x0)
            f(x).backward()
            num = (f(Value(x0 + h)).data - f(Value(x0 - h)).data) / (2 * h)
            worst[label] = max(worst.get(label, 0.0), abs(x.grad - num))
    return worst


def main():
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    for got, want, name in [(L.data, 10.5, "L"), (a.grad, 4.5, "dL/da"),
                            (b.grad, 3.0, "dL/db"), (c.grad, 1.5, "dL/dc"), (d.grad, 7.0, "dL/dd")]:
        expect(got, want, f"graph {name}")

    w1, w2, bias = Value(0.5), Value(0.3), Value(0.1)
    loss = lambda: 0.5 * ((w1 * 1.0 + w2 * 2.0 + bias).relu() - 1) ** 2
    L = loss()
    L.backward()
    expect(L.data, 0.02, "neuron L")
    for p, want, name in [(w1, 0.2, "w1"), (w2, 0.4, "w2"), (bias, 0.2, "b")]:
        expect(p.grad, want, f"neuron dL/d{name}")
    for p in (w1, w2, bias):
        p.data -= 0.1 * p.grad
    expect(loss().data < L.data, True, "gradient step lowers loss")

    expect(reuse_grad(), 7.0, "reuse x*x + x")

    for label, err in fd_max_error(random.Random(0)).items():
        expect(err < 1e-5, True, f"finite diff {label} (max err {err:.1e})")

    saved = Value._acc
    Value._acc = staticmethod(lambda node, g: setattr(node, "grad", g))  # '+=' -> '='
    try:
        broken_reuse, broken_fd = reuse_grad(), fd_max_error(random.Random(0))
    finally:
        Value._acc = staticmethod(saved)
    expect(abs(broken_reuse - 7.0) > 1e-3, True, f"bug caught by reuse ({broken_reuse})")
    expect(max(broken_fd.values()) > 1e-3, True, "bug caught by finite diffs")
    expect(reuse_grad(), 7.0, "restored reuse")
    return 1 if FAILED else 0


if __name__ == "__main__":
    raise SystemExit(main())

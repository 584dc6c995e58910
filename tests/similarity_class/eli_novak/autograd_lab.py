"""autograd lab -- e. novak"""
import itertools
import math
import unittest
from unittest import mock

_ids = itertools.count()


def _wrap(x):
    return x if isinstance(x, Value) else Value(x)


def _binary(op, f, df):
    # df(a, b) -> (d/da, d/db), evaluated lazily during backward
    def m(a, b):
        b = _wrap(b)
        return Value(f(a.data, b.data), (a, b), op, lambda: df(a.data, b.data))
    return m


def _unary(op, f, df):
    # df(x, y) -> dy/dx, where y = f(x)
    def m(a):
        y = f(a.data)
        return Value(y, (a,), op, lambda: (df(a.data, y),))
    return m


def _flip(m):
    return lambda a, b: m(_wrap(b), a)


class Value:
    def __init__(self, data, _prev=(), _op="", _d=None):
        self.data, self.grad = float(data), 0.0
        self._prev, self._op = tuple(_prev), _op
        self._d = _d or (lambda: ())
        self._n = next(_ids)  # creation order is a topological order

    def __repr__(self):
        return f"Value({self.data:g}, grad={self.grad:g})"

    __add__ = _binary("+", lambda a, b: a + b, lambda a, b: (1.0, 1.0))
    __sub__ = _binary("-", lambda a, b: a - b, lambda a, b: (1.0, -1.0))
    __mul__ = _binary("*", lambda a, b: a * b, lambda a, b: (b, a))
    __truediv__ = _binary("/", lambda a, b: a / b, lambda a, b: (1 / b, -a / b ** 2))
    __radd__, __rsub__, __rmul__, __rtruediv__ = map(
        _flip, (__add__, __sub__, __mul__, __truediv__))

    relu = _unary("relu", lambda x: max(x, 0.0), lambda x, y: float(x > 0))
    tanh = _unary("tanh", math.tanh, lambda x, y: 1 - y * y)
    exp = _unary("exp", math.exp, lambda x, y: y)
    log = _unary("log", math.log, lambda x, y: 1 / x)

    def __neg__(s):
        return s * -1

    def __pow__(s, k):
        if not isinstance(k, (int, float)):
            return NotImplemented
        return _unary(f"**{k}", lambda x: x ** k, lambda x, y: k * x ** (k - 1))(s)

    def backward(s):
        seen, todo = {s}, [s]
        while todo:
            for p in todo.pop()._prev:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        s.grad = 1.0
        for n in sorted(seen, key=lambda v: v._n, reverse=True):
            for p, d in zip(n._prev, n._d()):
                p.grad += d * n.grad


# ---- tests -------------------------------------------------------------

def _graph():
    a, b, c, d = map(Value, (2, 3, 1, 1.5))
    L = (a * b + c) * d.relu()
    L.backward()
    return L, (a, b, c, d)


def _loss(w1, w2, b, x1=1.0, x2=2.0):
    return 0.5 * ((w1 * x1 + w2 * x2 + b).relu() - 1) ** 2


def _nd(f, x, h=1e-6):
    return (f(Value(x + h)).data - f(Value(x - h)).data) / (2 * h)


class Basics(unittest.TestCase):
    def test_graph(self):
        L, vs = _graph()
        self.assertAlmostEqual(L.data, 10.5)
        for v, g in zip(vs, (4.5, 3.0, 1.5, 7.0)):
            self.assertAlmostEqual(v.grad, g)

    def test_neuron(self):
        p = [Value(v) for v in (0.5, 0.3, 0.1)]
        L = _loss(*p)
        L.backward()
        self.assertAlmostEqual(L.data, 0.02)
        for v, g in zip(p, (0.2, 0.4, 0.2)):
            self.assertAlmostEqual(v.grad, g)
        L2 = _loss(*(Value(v.data - 0.1 * v.grad) for v in p))
        self.assertLess(L2.data, L.data)

    def test_reuse(self):
        x = Value(3)
        y = x * x + x
        y.backward()
        self.assertEqual((y.data, x.grad), (12.0, 7.0))

    def test_reflected(self):
        v = Value(4)
        got = [(2 + v).data, (3 * v).data, (2 - v).data, (2 / v).data]
        self.assertEqual(got, [6.0, 12.0, -2.0, 0.5])

    def test_bookkeeping(self):
        a, b = Value(1), Value(2)
        c = a * b
        self.assertEqual((c._op, set(c._prev), a.grad), ("*", {a, b}, 0.0))


class FiniteDiff(unittest.TestCase):
    FS = {
        "cube": (lambda x: x * x * x, 1.2),
        "pow": (lambda x: x ** 2.5, 0.9),
        "inv": (lambda x: 2 / x, 1.4),
        "rsub": (lambda x: 2 - x * 3, 0.2),
        "div": (lambda x: x / (x + 1), 0.6),
        "neg": (lambda x: -x * x, -0.7),
        "tanh": (lambda x: x.tanh(), 0.5),
        "exp": (lambda x: (x * 2).exp(), -0.3),
        "log": (lambda x: (x * x + 1).log(), 0.8),
        "relu": (lambda x: (x - 0.5).relu() * x, 1.1),
    }

    def test_fd(self):
        for k, (f, x0) in self.FS.items():
            with self.subTest(k):
                x = Value(x0)
                f(x).backward()
                self.assertAlmostEqual(x.grad, _nd(f, x0), places=5)


def _ok(case, name):
    r = unittest.TestResult()
    case(name).run(r)
    return r.wasSuccessful()


_bad_mul = _binary("*", lambda a, b: a * b, lambda a, b: (b, b))  # d/db wrong


class BugInjection(unittest.TestCase):
    def test_caught(self):
        with mock.patch.object(Value, "__mul__", _bad_mul):
            self.assertFalse(_ok(Basics, "test_graph"))
            self.assertFalse(_ok(FiniteDiff, "test_fd"))
        self.assertTrue(_ok(Basics, "test_graph"))
        self.assertTrue(_ok(FiniteDiff, "test_fd"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

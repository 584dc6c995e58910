# Lab: scalar autograd
# Liam Berg
import itertools
import math
import unittest
from unittest import mock

_counter = itertools.count()


def _make_unop(op, fn, dfn):
    # dfn(x, y) gives dy/dx, with y = fn(x) already computed
    def method(inp):
        y = fn(inp.data)
        return Value(y, (inp,), op, lambda: (dfn(inp.data, y),))
    return method


def _reflected(method):
    return lambda lhs, rhs: method(_as_value(rhs), lhs)


def _as_value(obj):
    return obj if isinstance(obj, Value) else Value(obj)


def _make_binop(op, fn, dfn):
    # dfn returns the pair of partials, only called once backward() runs
    def method(lhs, rhs):
        rhs = _as_value(rhs)
        return Value(fn(lhs.data, rhs.data), (lhs, rhs), op, lambda: dfn(lhs.data, rhs.data))
    return method


def _reset_grads(root):
    # meant to zero the whole graph between runs, never ended up calling it
    stack, done = [root], set()
    while stack:
        node = stack.pop()
        if node in done:
            continue
        done.add(node)
        node.grad = 0.0
        stack.extend(node._prev)


class Value:
    def __init__(self, data, _parents=(), _op="", _local=None):
        self.data, self.grad = float(data), 0.0
        self._prev, self._op = tuple(_parents), _op
        self._d = _local or (lambda: ())
        self._n = next(_counter)  # ids grow as nodes are made, so this sorts topologically

    def backward(self):
        visited, stack = {self}, [self]
        while stack:
            for parent in stack.pop()._prev:
                if parent not in visited:
                    visited.add(parent)
                    stack.append(parent)
        if not visited:
            return  # never true, self is always in visited
        self.grad = 1.0
        for node in sorted(visited, key=lambda v: v._n, reverse=True):
            for parent, local in zip(node._prev, node._d()):
                parent.grad += local * node.grad

    def __pow__(self, power):
        if not isinstance(power, (int, float)):
            return NotImplemented
        return _make_unop(f"**{power}", lambda x: x ** power, lambda x, y: power * x ** (power - 1))(self)

    def __neg__(self):
        return self * -1

    def _show(self):
        # debugging helper, prints every node below this one
        for node in sorted(self._walk(), key=lambda v: v._n):
            print(node._n, node._op or "input", node)

    def _walk(self):
        out, stack = set(), [self]
        while stack:
            node = stack.pop()
            if node not in out:
                out.add(node)
                stack.extend(node._prev)
        return out

    tanh = _make_unop("tanh", math.tanh, lambda x, y: 1 - y * y)
    relu = _make_unop("relu", lambda x: max(x, 0.0), lambda x, y: float(x > 0))
    log = _make_unop("log", math.log, lambda x, y: 1 / x)
    exp = _make_unop("exp", math.exp, lambda x, y: y)

    __mul__ = _make_binop("*", lambda u, w: u * w, lambda u, w: (w, u))
    __add__ = _make_binop("+", lambda u, w: u + w, lambda u, w: (1.0, 1.0))
    __truediv__ = _make_binop("/", lambda u, w: u / w, lambda u, w: (1 / w, -u / w ** 2))
    __sub__ = _make_binop("-", lambda u, w: u - w, lambda u, w: (1.0, -1.0))
    __radd__, __rsub__, __rmul__, __rtruediv__ = map(
        _reflected, (__add__, __sub__, __mul__, __truediv__))

    def __repr__(self):
        return f"Value({self.data:g}, grad={self.grad:g})"


# ==== checks ===========================================================

def _numeric(fn, x, h=1e-6):
    return (fn(Value(x + h)).data - fn(Value(x - h)).data) / (2 * h)


def _neuron_loss(wa, wb, bias, xa=1.0, xb=2.0):
    return 0.5 * ((wa * xa + wb * xb + bias).relu() - 1) ** 2


def _small_graph():
    a, b, c, d = map(Value, (2, 3, 1, 1.5))
    loss = (a * b + c) * d.relu()
    loss.backward()
    return loss, (a, b, c, d)


def _passes(case, method_name):
    res = unittest.TestResult()
    case(method_name).run(res)
    return res.wasSuccessful()


class NumericGradients(unittest.TestCase):
    CASES = {
        "cube": (lambda t: t * t * t, 1.2),
        "pow": (lambda t: t ** 2.5, 0.9),
        "inv": (lambda t: 2 / t, 1.4),
        "rsub": (lambda t: 2 - t * 3, 0.2),
        "div": (lambda t: t / (t + 1), 0.6),
        "neg": (lambda t: -t * t, -0.7),
        "tanh": (lambda t: t.tanh(), 0.5),
        "exp": (lambda t: (t * 2).exp(), -0.3),
        "log": (lambda t: (t * t + 1).log(), 0.8),
        "relu": (lambda t: (t - 0.5).relu() * t, 1.1),
    }

    def test_against_finite_diff(self):
        for label, (fn, start) in self.CASES.items():
            with self.subTest(label):
                t = Value(start)
                fn(t).backward()
                self.assertAlmostEqual(t.grad, _numeric(fn, start), places=5)


class CoreOps(unittest.TestCase):
    def test_node_fields(self):
        x, y = Value(1), Value(2)
        z = x * y
        self.assertEqual((z._op, set(z._prev), x.grad), ("*", {x, y}, 0.0))

    def test_reused_input(self):
        t = Value(3)
        out = t * t + t
        out.backward()
        self.assertEqual((out.data, t.grad), (12.0, 7.0))

    def test_small_graph(self):
        loss, nodes = _small_graph()
        self.assertAlmostEqual(loss.data, 10.5)
        for node, want in zip(nodes, (4.5, 3.0, 1.5, 7.0)):
            self.assertAlmostEqual(node.grad, want)

    def test_number_on_left(self):
        t = Value(4)
        results = [(2 + t).data, (3 * t).data, (2 - t).data, (2 / t).data]
        self.assertEqual(results, [6.0, 12.0, -2.0, 0.5])

    def test_single_neuron(self):
        params = [Value(w) for w in (0.5, 0.3, 0.1)]
        loss = _neuron_loss(*params)
        loss.backward()
        self.assertAlmostEqual(loss.data, 0.02)
        for w, want in zip(params, (0.2, 0.4, 0.2)):
            self.assertAlmostEqual(w.grad, want)
        new_loss = _neuron_loss(*(Value(w.data - 0.1 * w.grad) for w in params))
        self.assertLess(new_loss.data, loss.data)


_wrong_mul = _make_binop("*", lambda u, w: u * w, lambda u, w: (w, w))  # second partial is wrong on purpose


class BrokenMulIsCaught(unittest.TestCase):
    def test_detected(self):
        with mock.patch.object(Value, "__mul__", _wrong_mul):
            self.assertFalse(_passes(CoreOps, "test_small_graph"))
            self.assertFalse(_passes(NumericGradients, "test_against_finite_diff"))
        self.assertTrue(_passes(CoreOps, "test_small_graph"))
        self.assertTrue(_passes(NumericGradients, "test_against_finite_diff"))


if __name__ == "__main__":
    unittest.main(verbosity=2)

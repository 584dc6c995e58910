"""Autograd lab -- Fay Osei.

One small subclass of ``Value`` per operation.  Each node only reports its
local derivatives (``local_grads``); the shared ``_backprop`` applies the
chain rule.  Subtraction and division are built from +, * and **.
"""
import math


class Value:
    """A scalar in the computation graph. Leaves are plain ``Value``s."""

    _op = ""

    def __init__(self, data, _children=()):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)

    def __repr__(self):
        return f"{type(self).__name__}(data={self.data:.4f}, grad={self.grad:.4f})"

    # -- hooks the subclasses override ---------------------------------
    def local_grads(self):
        """d(self)/d(parent) for every parent, in the same order as _prev."""
        return ()

    def _backprop(self):
        for parent, local in zip(self._prev, self.local_grads()):
            parent.grad += local * self.grad

    # -- operator plumbing ---------------------------------------------
    @staticmethod
    def lift(x): return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):  return AddNode(self, Value.lift(other))
    def __radd__(self, other): return AddNode(Value.lift(other), self)
    def __mul__(self, other):  return MulNode(self, Value.lift(other))
    def __rmul__(self, other): return MulNode(Value.lift(other), self)

    def __pow__(self, k):
        if not isinstance(k, (int, float)):
            raise TypeError("exponent must be an int or float")
        return PowNode(self, k)

    def __neg__(self): return -1 * self

    # a - b  ==  a + (-1 * b)        a / b  ==  a * b**-1
    def __sub__(self, other):      return self + (-1 * Value.lift(other))
    def __rsub__(self, other):     return Value.lift(other) + (-1 * self)
    def __truediv__(self, other):  return self * Value.lift(other) ** -1
    def __rtruediv__(self, other): return Value.lift(other) * self ** -1

    def relu(self): return ReluNode(self)
    def tanh(self): return TanhNode(self)
    def exp(self):  return ExpNode(self)
    def log(self):  return LogNode(self)

    # -- reverse mode ----------------------------------------------------
    def _topological(self):
        order, visited = [], set()

        def visit(node):
            if id(node) in visited:
                return
            visited.add(id(node))
            for parent in node._prev:
                visit(parent)
            order.append(node)          # post-order: parents before child
        visit(self)
        return order

    def backward(self):
        self.grad = 1.0
        for node in reversed(self._topological()):
            node._backprop()


class AddNode(Value):
    _op = "+"
    def __init__(self, a, b):
        super().__init__(a.data + b.data, (a, b))

    def local_grads(self):
        return (1.0, 1.0)


class MulNode(Value):
    _op = "*"
    def __init__(self, a, b):
        super().__init__(a.data * b.data, (a, b))

    def local_grads(self):
        a, b = self._prev
        return (b.data, a.data)


class PowNode(Value):
    _op = "**"
    def __init__(self, a, k):
        super().__init__(a.data ** k, (a,))
        self.k = k

    def local_grads(self):
        (a,) = self._prev
        return (self.k * a.data ** (self.k - 1),)


class ReluNode(Value):
    _op = "relu"
    def __init__(self, a):
        super().__init__(max(0.0, a.data), (a,))

    def local_grads(self):
        return (1.0 if self.data > 0 else 0.0,)


class TanhNode(Value):
    _op = "tanh"
    def __init__(self, a):
        super().__init__(math.tanh(a.data), (a,))

    def local_grads(self):
        return (1.0 - self.data ** 2,)


class ExpNode(Value):
    _op = "exp"
    def __init__(self, a):
        super().__init__(math.exp(a.data), (a,))

    def local_grads(self):
        return (self.data,)


class LogNode(Value):
    _op = "log"
    def __init__(self, a):
        super().__init__(math.log(a.data), (a,))

    def local_grads(self):
        (a,) = self._prev
        return (1.0 / a.data,)


# ----------------------------------------------------------------- checks --
def close(x, y, tol=1e-6):
    return abs(x - y) <= tol * max(1.0, abs(x), abs(y))


def check_graph():
    a, b, c, d = Value(2), Value(3), Value(1), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    return close(L.data, 10.5) and all(
        close(v.grad, g) for v, g in [(a, 4.5), (b, 3.0), (c, 1.5), (d, 7.0)])


def neuron_loss(w1, w2, b):
    z = w1 * 1.0 + w2 * 2.0 + b
    return 0.5 * (z.relu() - 1) ** 2


def check_neuron():
    w1, w2, b = Value(0.5), Value(0.3), Value(0.1)
    L = neuron_loss(w1, w2, b)
    L.backward()
    ok = close(L.data, 0.02) and close(w1.grad, 0.2) \
        and close(w2.grad, 0.4) and close(b.grad, 0.2)
    lr = 0.1
    stepped = [Value(p.data - lr * p.grad) for p in (w1, w2, b)]
    return ok and neuron_loss(*stepped).data < L.data


def check_reuse():
    x = Value(3)
    y = x * x + x
    y.backward()
    return close(y.data, 12.0) and close(x.grad, 7.0)


def check_finite_differences(h=1e-5):
    cases = [
        (lambda x: x * x * x - 2 * x, 1.3), (lambda x: 2 / x + x / 4, 0.7),
        (lambda x: (x * 1.5).tanh(), 0.4),  (lambda x: x.exp() * x, -0.6),
        (lambda x: (x ** 2 + 1).log(), 0.9), (lambda x: 3 - x.relu() * x, 1.1),
    ]
    for f, x0 in cases:
        x = Value(x0)
        f(x).backward()
        numeric = (f(Value(x0 + h)).data - f(Value(x0 - h)).data) / (2 * h)
        if not close(x.grad, numeric, tol=1e-4):
            return False
    return True


def check_bug_injection():
    """Swap accumulation for assignment; the reuse check has to notice."""
    original = Value._backprop
    def overwriting_backprop(self):
        for parent, local in zip(self._prev, self.local_grads()):
            parent.grad = local * self.grad      # BUG: '=' instead of '+='
    Value._backprop = overwriting_backprop
    try:
        caught = not check_reuse()
    finally:
        Value._backprop = original
    return caught and check_reuse()


if __name__ == "__main__":
    checks = [check_graph, check_neuron, check_reuse,
              check_finite_differences, check_bug_injection]
    failed = 0
    for check in checks:
        ok = check()
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {check.__name__}")
    raise SystemExit(1 if failed else 0)

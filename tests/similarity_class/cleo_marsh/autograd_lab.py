"""autograd_lab.py  (Cleo Marsh) -- scalar reverse-mode autodiff.

Every Value keeps `_edges`: a tuple of (parent, d(self)/d(parent)) pairs,
plain numbers worked out when the node is created.  backward() never needs
to know which op made a node; it only applies  parent.grad += local * grad.
Order comes from Kahn's algorithm: a node hands its gradient down only once
every node that consumes it has already done so.
"""
import math
import sys
from collections import deque

# Only the bug-injection check touches this.  True => backward uses '=' not '+='.
_OVERWRITE_GRADS = False


def _as_value(x):
    return x if isinstance(x, Value) else Value(x)


class Value:
    __slots__ = ("data", "grad", "_edges", "_op")

    def __init__(self, data, edges=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self._edges = tuple(edges)
        self._op = op

    @property
    def _prev(self):
        return tuple(parent for parent, _ in self._edges)

    # --- arithmetic: (parent, local derivative) pairs ---------------------
    def __add__(self, other):
        other = _as_value(other)
        return Value(self.data + other.data, ((self, 1.0), (other, 1.0)), "+")

    def __sub__(self, other):
        other = _as_value(other)
        return Value(self.data - other.data, ((self, 1.0), (other, -1.0)), "-")

    def __mul__(self, other):
        other = _as_value(other)
        return Value(self.data * other.data,
                     ((self, other.data), (other, self.data)), "*")

    def __truediv__(self, other):
        other = _as_value(other)
        q = self.data / other.data
        return Value(q, ((self, 1.0 / other.data), (other, -q / other.data)), "/")

    def __pow__(self, n):
        if not isinstance(n, (int, float)):
            return NotImplemented
        return Value(self.data ** n, ((self, n * self.data ** (n - 1)),), f"^{n}")

    def __neg__(self):
        return Value(-self.data, ((self, -1.0),), "neg")

    def __radd__(self, other):
        return _as_value(other) + self

    def __rsub__(self, other):
        return _as_value(other) - self

    def __rmul__(self, other):
        return _as_value(other) * self

    def __rtruediv__(self, other):
        return _as_value(other) / self

    # --- elementary functions ---------------------------------------------
    def relu(self):
        positive = self.data > 0
        return Value(self.data if positive else 0.0,
                     ((self, 1.0 if positive else 0.0),), "relu")

    def tanh(self):
        t = math.tanh(self.data)
        return Value(t, ((self, 1.0 - t * t),), "tanh")

    def exp(self):
        e = math.exp(self.data)
        return Value(e, ((self, e),), "exp")

    def log(self):
        return Value(math.log(self.data), ((self, 1.0 / self.data),), "log")

    # --- reverse pass -------------------------------------------------------
    def backward(self):
        # 1) discover the graph; pending[v] = number of edges pointing at v
        pending = {self: 0}
        frontier = [self]
        while frontier:
            node = frontier.pop()
            for parent, _ in node._edges:
                if parent not in pending:
                    pending[parent] = 0
                    frontier.append(parent)
                pending[parent] += 1

        # 2) Kahn: release a node once all of its consumers have been handled
        self.grad = 1.0
        ready = deque([self])
        while ready:
            node = ready.popleft()
            for parent, local in node._edges:
                if _OVERWRITE_GRADS:
                    parent.grad = local * node.grad
                else:
                    parent.grad += local * node.grad
                pending[parent] -= 1
                if pending[parent] == 0:
                    ready.append(parent)


# --- checks: expect() prints a line and records failures instead of stopping
failures = []


def expect(label, got, want, rel=1e-9, abs_=1e-9):
    ok = math.isclose(got, want, rel_tol=rel, abs_tol=abs_)
    print(f"  [{'pass' if ok else 'FAIL'}] {label}: got {got:.6g}, want {want:.6g}")
    if not ok:
        failures.append(label)
    return ok


def check_worked_example():
    print("worked example")
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    expect("L", L.data, 10.5)
    for name, v, want in (("a", a, 4.5), ("b", b, 3.0), ("c", c, 1.5), ("d", d, 7.0)):
        expect(f"dL/d{name}", v.grad, want)


def check_neuron():
    print("single neuron + one gradient step")
    x1, x2 = 1.0, 2.0
    w1, w2, b = Value(0.5), Value(0.3), Value(0.1)
    z = w1 * x1 + w2 * x2 + b
    L = 0.5 * (z.relu() - 1) ** 2
    L.backward()
    expect("L", L.data, 0.02)
    for name, v, want in (("w1", w1, 0.2), ("w2", w2, 0.4), ("b", b, 0.2)):
        expect(f"dL/d{name}", v.grad, want)
    lr = 0.1
    w1n, w2n, bn = (Value(p.data - lr * p.grad) for p in (w1, w2, b))
    L_new = 0.5 * ((w1n * x1 + w2n * x2 + bn).relu() - 1) ** 2
    expect("loss went down (1 = yes)", float(L_new.data < L.data), 1.0)


def check_reuse():
    print("value used twice: y = x*x + x at x = 3")
    x = Value(3.0)
    y = x * x + x
    y.backward()
    expect("dy/dx", x.grad, 7.0)


def central_diff(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2.0 * h)


def check_finite_differences():
    print("backward vs centered finite differences")
    ops = {
        "x*x":       lambda v: v * v,
        "x**3":      lambda v: v ** 3,
        "x**-0.5":   lambda v: v ** -0.5,
        "1/x":       lambda v: 1 / v,
        "2-x":       lambda v: 2 - v,
        "-x/3":      lambda v: -v / 3,
        "tanh":      lambda v: v.tanh(),
        "exp(-x)":   lambda v: (-v).exp(),
        "log(x)":    lambda v: v.log(),
        "relu(x-1)": lambda v: (v - 1).relu(),
        "combo":     lambda v: (v * v + 1).log() * v.tanh(),
    }
    for name, f in ops.items():
        for x0 in (0.5, 1.5, 2.5):
            x = Value(x0)
            f(x).backward()
            numeric = central_diff(lambda t: f(Value(t)).data, x0)
            expect(f"{name} @ {x0}", x.grad, numeric, rel=1e-5, abs_=1e-7)


def check_bug_injection():
    global _OVERWRITE_GRADS
    print("bug injection: backward switched to '=' instead of '+='")
    before = len(failures)
    _OVERWRITE_GRADS = True
    try:
        check_reuse()
    finally:
        _OVERWRITE_GRADS = False
    caught = len(failures) > before
    del failures[before:]            # those FAILs were the point of the exercise
    print("  -> injected bug", "CAUGHT" if caught else "MISSED")
    if not caught:
        failures.append("bug injection was not detected")
    check_reuse()                     # and behaves again after restoring


if __name__ == "__main__":
    check_worked_example()
    check_neuron()
    check_reuse()
    check_finite_differences()
    check_bug_injection()
    print()
    if failures:
        print(f"{len(failures)} failure(s): {failures}")
        sys.exit(1)
    print("everything checks out")

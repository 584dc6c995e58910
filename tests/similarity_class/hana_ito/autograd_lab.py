"""autograd_lab.py -- Hana Ito

Scalar reverse-mode differentiation.  The calculus lives in two tables
instead of being scattered through methods:

    FORWARD[op](xs, p)          -> y
    DERIVATIVES[op](xs, y, p)   -> (dy/dx_1, ..., dy/dx_n)

xs are the input values, y the output, p an optional constant (the exponent
of "pow").  Every node is made by the single constructor `_apply`, whose
backward closure looks the rule up in DERIVATIVES at call time.
"""
import math
from collections import deque

FORWARD = {
    "add":  lambda xs, p: xs[0] + xs[1],
    "sub":  lambda xs, p: xs[0] - xs[1],
    "mul":  lambda xs, p: xs[0] * xs[1],
    "div":  lambda xs, p: xs[0] / xs[1],
    "pow":  lambda xs, p: xs[0] ** p,
    "neg":  lambda xs, p: -xs[0],
    "relu": lambda xs, p: xs[0] if xs[0] > 0 else 0.0,
    "tanh": lambda xs, p: math.tanh(xs[0]),
    "exp":  lambda xs, p: math.exp(xs[0]),
    "log":  lambda xs, p: math.log(xs[0]),
}

DERIVATIVES = {
    "add":  lambda xs, y, p: (1.0, 1.0),
    "sub":  lambda xs, y, p: (1.0, -1.0),
    "mul":  lambda xs, y, p: (xs[1], xs[0]),                  # d(uv) = v du + u dv
    "div":  lambda xs, y, p: (1.0 / xs[1], -xs[0] / xs[1] ** 2),
    "pow":  lambda xs, y, p: (p * xs[0] ** (p - 1),),
    "neg":  lambda xs, y, p: (-1.0,),
    "relu": lambda xs, y, p: (1.0 if xs[0] > 0 else 0.0,),
    "tanh": lambda xs, y, p: (1.0 - y * y,),                  # sech^2 = 1 - tanh^2
    "exp":  lambda xs, y, p: (y,),
    "log":  lambda xs, y, p: (1.0 / xs[0],),
}


class Value:
    def __init__(self, data, _prev=(), _op="", _param=None):
        self.data = float(data)
        self.grad = 0.0
        self._args = tuple(_prev)        # ordered (x*x keeps both copies)
        self._prev = set(_prev)          # distinct parents, for the graph walk
        self._op = _op
        self._param = _param
        self._backward = lambda: None

    def __repr__(self):
        return f"Value({self.data:g}, grad={self.grad:g}, op={self._op or 'leaf'})"

    def __add__(self, o):      return _apply("add", self, o)
    def __radd__(self, o):     return _apply("add", o, self)
    def __sub__(self, o):      return _apply("sub", self, o)
    def __rsub__(self, o):     return _apply("sub", o, self)
    def __mul__(self, o):      return _apply("mul", self, o)
    def __rmul__(self, o):     return _apply("mul", o, self)
    def __truediv__(self, o):  return _apply("div", self, o)
    def __rtruediv__(self, o): return _apply("div", o, self)
    def __neg__(self):         return _apply("neg", self)

    def __pow__(self, p):
        if not isinstance(p, (int, float)):
            raise TypeError("only constant int/float exponents are supported")
        return _apply("pow", self, param=p)

    def relu(self): return _apply("relu", self)
    def tanh(self): return _apply("tanh", self)
    def exp(self):  return _apply("exp", self)
    def log(self):  return _apply("log", self)

    def topological_levels(self):
        """Kahn's algorithm on the reversed graph, level by level (BFS).

        A node enters the queue only after every node that consumes it has
        left, so its gradient is complete when its own rule runs.
        """
        pending, seen, stack = {}, {id(self)}, [self]
        while stack:                              # count consumers per node
            v = stack.pop()
            for u in v._prev:
                pending[id(u)] = pending.get(id(u), 0) + 1
                if id(u) not in seen:
                    seen.add(id(u))
                    stack.append(u)
        order, queue = [], deque([self])
        while queue:
            v = queue.popleft()
            order.append(v)
            for u in v._prev:
                pending[id(u)] -= 1
                if pending[id(u)] == 0:
                    queue.append(u)
        return order                              # output first, leaves last

    def backward(self):
        self.grad = 1.0
        for v in self.topological_levels():
            v._backward()


def _apply(op_name, *inputs, param=None):
    xs = tuple(v if isinstance(v, Value) else Value(v) for v in inputs)
    out = Value(FORWARD[op_name]([x.data for x in xs], param), xs, op_name, param)

    def _backward():
        partials = DERIVATIVES[op_name]([x.data for x in xs], out.data, param)
        for x, dydx in zip(xs, partials):
            x.grad += dydx * out.grad             # chain rule, accumulated
    out._backward = _backward
    return out


# --------------------------------------------------------------------------
# checks: each row is (name, build_fn, expected); build_fn -> (out, leaves)
# --------------------------------------------------------------------------
def _graph():
    a, b, c, d = map(Value, (2.0, 3.0, 1.0, 1.5))
    return (a * b + c) * d.relu(), dict(a=a, b=b, c=c, d=d)


def _neuron():
    w1, w2, b = map(Value, (0.5, 0.3, 0.1))
    z = w1 * 1.0 + w2 * 2.0 + b
    return 0.5 * (z.relu() - 1) ** 2, dict(w1=w1, w2=w2, b=b)


def _neuron_after_step(lr=0.1):
    loss, p = _neuron()
    loss.backward()
    w1, w2, b = (Value(p[k].data - lr * p[k].grad) for k in ("w1", "w2", "b"))
    return 0.5 * ((w1 * 1.0 + w2 * 2.0 + b).relu() - 1) ** 2, {}


def _reuse():
    x = Value(3.0)
    return x * x + x, dict(x=x)


CASES = [
    ("lecture graph", _graph, dict(out=10.5, a=4.5, b=3.0, c=1.5, d=7.0)),
    ("neuron loss",   _neuron, dict(out=0.02, w1=0.2, w2=0.4, b=0.2)),
    ("one SGD step",  _neuron_after_step, dict(out=lambda L: L < 0.02)),
    ("reuse x*x+x",   _reuse, dict(out=12.0, x=7.0)),
]

FD_CASES = [   # (name, f, x0): d f / dx at x0 vs. centered difference
    ("x^3 - 2/x",        lambda x: x ** 3 - 2 / x,           1.2),
    ("(1 - x) * x",      lambda x: (1 - x) * x,              0.4),
    ("tanh(2x)",         lambda x: (2 * x).tanh(),           0.3),
    ("exp(-x^2)",        lambda x: (-(x * x)).exp(),         0.8),
    ("log(1 + x) / x",   lambda x: (1 + x).log() / x,        1.7),
    ("relu(x - 0.5)^2",  lambda x: (x - 0.5).relu() ** 2,    0.9),
]


def _matches(got, want, tol=1e-6):
    return want(got) if callable(want) else math.isclose(got, want, rel_tol=tol, abs_tol=tol)


def run_cases():
    failures = []
    for name, build, expected in CASES:
        out, leaves = build()
        out.backward()
        got = {"out": out.data, **{k: v.grad for k, v in leaves.items()}}
        if not all(_matches(got[k], w) for k, w in expected.items()):
            failures.append(name)
    return failures


def run_fd(h=1e-6):
    failures = []
    for name, f, x0 in FD_CASES:
        x = Value(x0)
        f(x).backward()
        numeric = (f(Value(x0 + h)).data - f(Value(x0 - h)).data) / (2 * h)
        if not _matches(x.grad, numeric, tol=1e-5):
            failures.append(name)
    return failures


def run_bug_injection():
    """Corrupt tanh's rule (drop the square); finite differences must object."""
    good = DERIVATIVES["tanh"]
    DERIVATIVES["tanh"] = lambda xs, y, p: (1.0 - y,)
    try:
        caught = run_fd()
    finally:
        DERIVATIVES["tanh"] = good
    return ["bug not caught"] if caught != ["tanh(2x)"] else []


if __name__ == "__main__":
    report = [("table cases", run_cases()), ("finite differences", run_fd()),
              ("bug injection", run_bug_injection()), ("after restore", run_fd())]
    for label, failures in report:
        print(f"{label:<20} {'ok' if not failures else 'FAILED: ' + ', '.join(failures)}")
    raise SystemExit(any(f for _, f in report))

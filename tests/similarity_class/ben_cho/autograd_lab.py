# autograd_lab.py -- Ben Cho
# Reverse-mode autodiff on scalars.
# Design: a Value only records WHAT produced it (op name, parents and maybe a
# constant).  Forward and derivative rules live in two tables keyed by op
# name (FORWARD, BACKWARD_RULES); backward() looks each node's rule up.

import math
import sys

def lift(x):
    return x if isinstance(x, Value) else Value(x)

# forward rules: op name -> how to compute .data from the parents' data
FORWARD = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "relu": lambda a: max(a, 0.0),
    "tanh": math.tanh,
    "exp": math.exp,
    "log": math.log,
}

def apply(op, *args):
    parents = tuple(lift(x) for x in args)
    return Value(FORWARD[op](*(p.data for p in parents)), parents, op)

class Value:
    def __init__(self, data, _prev=(), _op="", _const=None):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_prev)
        self._op = _op
        self._const = _const      # extra number an op may need (pow's exponent)

    __add__ = lambda self, o: apply("add", self, o)
    __sub__ = lambda self, o: apply("sub", self, o)
    __mul__ = lambda self, o: apply("mul", self, o)
    __truediv__ = lambda self, o: apply("div", self, o)
    __radd__ = lambda self, o: apply("add", o, self)
    __rsub__ = lambda self, o: apply("sub", o, self)
    __rmul__ = lambda self, o: apply("mul", o, self)
    __rtruediv__ = lambda self, o: apply("div", o, self)
    __neg__ = lambda self: apply("neg", self)
    relu = lambda self: apply("relu", self)
    tanh = lambda self: apply("tanh", self)
    exp = lambda self: apply("exp", self)
    log = lambda self: apply("log", self)

    def __pow__(self, k):
        if not isinstance(k, (int, float)):
            raise TypeError("exponent must be an int or float")
        return Value(self.data ** k, (self,), "pow", _const=k)

    def backward(self):
        order = topo_order(self)
        self.grad = 1.0
        for node in reversed(order):
            if node._prev:                       # leaves have no rule
                BACKWARD_RULES[node._op](node, *node._prev)

def topo_order(root):
    """Post-order DFS without recursion.  Stack items are (node, expanded?)."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)          # all parents already emitted
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for parent in node._prev:
            if parent not in seen:
                stack.append((parent, False))
    return order

# ---- the rule table: fn(out, *parents) ------------------------------------
def _bw_add(out, a, b):
    a.grad += out.grad
    b.grad += out.grad

def _bw_sub(out, a, b):
    a.grad += out.grad
    b.grad -= out.grad

def _bw_mul(out, a, b):
    a.grad += b.data * out.grad
    b.grad += a.data * out.grad

def _bw_div(out, a, b):
    a.grad += out.grad / b.data
    b.grad -= a.data / (b.data * b.data) * out.grad

def _bw_pow(out, a):
    k = out._const
    a.grad += k * a.data ** (k - 1) * out.grad

def _bw_neg(out, a): a.grad -= out.grad
def _bw_relu(out, a): a.grad += out.grad if a.data > 0 else 0.0
def _bw_tanh(out, a): a.grad += (1.0 - out.data ** 2) * out.grad
def _bw_exp(out, a): a.grad += out.data * out.grad
def _bw_log(out, a): a.grad += out.grad / a.data

BACKWARD_RULES = {
    "add": _bw_add, "sub": _bw_sub, "mul": _bw_mul, "div": _bw_div,
    "pow": _bw_pow, "neg": _bw_neg, "relu": _bw_relu, "tanh": _bw_tanh,
    "exp": _bw_exp, "log": _bw_log,
}

# ---- checks + a tiny runner ----------------------------------------------
CHECKS = []

def check(fn):
    CHECKS.append(fn)
    return fn

def approx(got, want, eps=1e-6):
    if abs(got - want) > eps:
        raise AssertionError("got %r, wanted %r" % (got, want))

def passes(fn):
    try:
        fn()
        return True
    except AssertionError:
        return False

@check
def graph_example():
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    approx(L.data, 10.5)
    for v, want in ((a, 4.5), (b, 3.0), (c, 1.5), (d, 7.0)):
        approx(v.grad, want)

@check
def neuron_and_sgd_step():
    params = {"w1": Value(0.5), "w2": Value(0.3), "b": Value(0.1)}

    def loss(p):
        z = p["w1"] * 1.0 + p["w2"] * 2.0 + p["b"]
        return 0.5 * (z.relu() - 1) ** 2

    L = loss(params)
    L.backward()
    approx(L.data, 0.02)
    approx(params["w1"].grad, 0.2); approx(params["w2"].grad, 0.4); approx(params["b"].grad, 0.2)
    stepped = {k: Value(v.data - 0.1 * v.grad) for k, v in params.items()}
    assert loss(stepped).data < L.data, "SGD step did not reduce the loss"

@check
def reuse_accumulates():
    x = Value(3.0)
    (x * x + x).backward()
    approx(x.grad, 7.0)

FD_CASES = {
    "add":  (lambda a, b: a + b, 1.5, -0.5),
    "sub":  (lambda a, b: a - b, 0.2, 0.9),
    "mul":  (lambda a, b: a * b, 1.1, -2.0),
    "div":  (lambda a, b: a / b, 0.7, 1.9),
    "pow":  (lambda a, b: a ** 3 + b ** 0.5, 1.2, 2.0),
    "neg":  (lambda a, b: -a * b, 0.4, 0.6),
    "relu": (lambda a, b: (a * b).relu(), 1.0, 0.5),
    "tanh": (lambda a, b: (a - b).tanh(), 0.3, -0.2),
    "exp":  (lambda a, b: (a * b).exp(), 0.5, 0.8),
    "log":  (lambda a, b: (a + b * b).log(), 1.5, 0.7),
    "refl": (lambda a, b: 2 - a + 3 * b + 2 / a + 1 / (b + 1), 1.3, 0.4),
}

@check
def gradient_vs_finite_difference():
    h = 1e-6
    for name, (f, a0, b0) in FD_CASES.items():
        a, b = Value(a0), Value(b0)
        f(a, b).backward()
        da = (f(Value(a0 + h), Value(b0)).data - f(Value(a0 - h), Value(b0)).data) / (2 * h)
        db = (f(Value(a0), Value(b0 + h)).data - f(Value(a0), Value(b0 - h)).data) / (2 * h)
        if abs(da - a.grad) > 1e-4 or abs(db - b.grad) > 1e-4:
            raise AssertionError("%s: analytic (%g, %g) vs numeric (%g, %g)"
                                 % (name, a.grad, b.grad, da, db))

@check
def injected_bug_is_caught():
    good = BACKWARD_RULES["mul"]

    def bad_mul(out, a, b):        # '=' instead of '+=' -- the classic mistake
        a.grad = b.data * out.grad
        b.grad = a.data * out.grad

    BACKWARD_RULES["mul"] = bad_mul
    try:
        failing = [c.__name__ for c in (graph_example, reuse_accumulates) if not passes(c)]
    finally:
        BACKWARD_RULES["mul"] = good
    assert "reuse_accumulates" in failing, "broken mul rule went unnoticed"
    assert passes(reuse_accumulates), "rule table was not restored"

def run_checks():
    passed = 0
    for fn in CHECKS:
        try:
            fn()
        except Exception as e:
            print("FAIL  %-30s %s: %s" % (fn.__name__, type(e).__name__, e))
        else:
            passed += 1
            print("ok    %s" % fn.__name__)
    print("%d/%d checks passed" % (passed, len(CHECKS)))
    return passed == len(CHECKS)

if __name__ == "__main__":
    sys.exit(0 if run_checks() else 1)

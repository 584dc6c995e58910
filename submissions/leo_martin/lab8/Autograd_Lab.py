"""
autograd_lab.py  --  A8 Hands-On: Build, Match, and Stress the Engine
Leo Martin

STEP 5 NOTES (deliberate bug injection)
---------------------------------------
I changed `self.grad += ...` to `self.grad = ...` in the backward closure of
Value.__mul__ and re-ran this file.

  FAILED:  y = x*x + x at x = 3  ->  assert x.grad == 7.0 blew up, got 6.0.
           The "+" node runs first (reverse topo order) and puts 1.0 into
           x.grad for the "+ x" path. Then the multiply *overwrote* x.grad
           with 3.0 instead of adding to it, so the "+ x" path got dropped:
           3 + 3 = 6 instead of 1 + 3 + 3 = 7.
           With BOTH updates in __mul__ switched to `=` it gets worse (3.0):
           only the last write (right factor of x*x) survives.

  PASSED:  Part 1 graph, a.grad == 4.5. `a` only reaches L through n1 = a*b,
           so there is one path and nothing to overwrite. Funny enough
           (a + a) * a also still gave 8.0 -- the multiply runs before the two
           additions, so it writes into a.grad while it's still 0.

Put the += back afterwards (obviously).
"""

import math


class Value:
    """A scalar that remembers how it was computed (micrograd style)."""

    def __init__(self, data, _children=(), _op=''):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)     # parents in the graph
        self._op = _op                  # just for debugging / printing
        self._backward = lambda: None   # leaves have nothing to push

    def __repr__(self):
        return f"Value(data={self.data:.4f}, grad={self.grad:.4f}, op='{self._op}')"

    @staticmethod
    def _coerce(x):
        """Wrap plain numbers so every edge is Value -> Value."""
        return x if isinstance(x, Value) else Value(x)

    # ------------------------------------------------------------------ ops
    def __add__(self, other):
        other = Value._coerce(other)
        out = Value(self.data + other.data, (self, other), '+')

        def _backward():
            # d(out)/d(self) = d(out)/d(other) = 1
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = Value._coerce(other)
        out = Value(self.data * other.data, (self, other), '*')

        def _backward():
            # each side gets upstream * the OTHER factor
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, k):
        if not isinstance(k, (int, float)):
            raise TypeError("only supporting int/float exponents")
        out = Value(self.data ** k, (self,), f'**{k}')

        def _backward():
            self.grad += k * (self.data ** (k - 1)) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        # a / b == a * b^-1, so no separate quotient rule needed
        return self * Value._coerce(other) ** -1

    # reflected versions, for things like 2 * x or 1 - x
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value._coerce(other) + (-self)

    def __rtruediv__(self, other):
        return Value._coerce(other) * self ** -1

    # ---------------------------------------------------------- activations
    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')

        def _backward():
            self.grad += (1.0 - t * t) * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), (self,), 'relu')

        def _backward():
            # gate on the INPUT; I'm using relu'(0) = 0
            gate = 1.0 if self.data > 0 else 0.0
            self.grad += gate * out.grad
        out._backward = _backward
        return out

    def exp(self):
        e = math.exp(self.data)
        out = Value(e, (self,), 'exp')

        def _backward():
            self.grad += e * out.grad   # d/dx e^x = e^x (= out.data)
        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), 'log')

        def _backward():
            self.grad += out.grad / self.data
        out._backward = _backward
        return out

    # ------------------------------------------------------------- backward
    def backward(self):
        # 1) topological order by DFS (parents before children)
        topo = []
        seen = set()

        def visit(v):
            if v in seen:
                return
            seen.add(v)
            for parent in v._prev:
                visit(parent)
            topo.append(v)

        visit(self)

        # 2) seed dL/dL = 1
        self.grad = 1.0

        # 3) walk it backwards so every consumer finishes before its producer
        for v in reversed(topo):
            v._backward()


# ---------------------------------------------------------------------------
# checks (Steps 2-6)
# ---------------------------------------------------------------------------
TOL = 1e-9


def close(got, want, tol=TOL):
    return abs(got - want) < tol


if __name__ == "__main__":
    # ---- Step 2: Part 1 graph L = (a*b + c) * relu(d)
    a = Value(2.0)
    b = Value(3.0)
    c = Value(1.0)
    d = Value(1.5)
    n1 = a * b
    n2 = n1 + c
    n3 = d.relu()
    L = n2 * n3
    L.backward()

    print("Step 2")
    print("  L =", L)
    print("  grads:", a.grad, b.grad, c.grad, d.grad)
    assert close(L.data, 10.5), L.data
    assert close(a.grad, 4.5), a.grad
    assert close(b.grad, 3.0), b.grad
    assert close(c.grad, 1.5), c.grad
    assert close(d.grad, 7.0), d.grad

    # ---- Step 3: A6 neuron
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2 = Value(0.5), Value(0.3)
    bias = Value(0.1)
    target = Value(1.0)

    z = w1 * x1 + w2 * x2 + bias
    act = z.relu()
    loss = 0.5 * (act - target) ** 2
    loss.backward()

    print("Step 3")
    print(f"  z={z.data:.4f}  a={act.data:.4f}  loss={loss.data:.6f}")
    assert close(z.data, 1.2)
    assert close(loss.data, 0.02), loss.data
    expected = {"w1": (w1, 0.2), "w2": (w2, 0.4), "b": (bias, 0.2),
                "x1": (x1, 0.1), "x2": (x2, 0.06)}
    for name, (node, want) in expected.items():
        print(f"  d loss/d {name} = {node.grad:.6f} (hand: {want})")
        assert close(node.grad, want), (name, node.grad, want)

    # ---- Step 4: reuse stress tests
    x = Value(3.0)
    y = x * x + x
    y.backward()
    print("Step 4")
    print("  y = x*x + x at 3: y =", y.data, " dy/dx =", x.grad)
    assert close(y.data, 12.0)
    assert close(x.grad, 7.0), f"x.grad should be 2x+1 = 7, got {x.grad}"

    a = Value(2.0)
    bb = a + a
    cc = bb * a
    cc.backward()
    print("  c = (a+a)*a at 2: c =", cc.data, " dc/da =", a.grad)
    assert close(cc.data, 8.0)
    assert close(a.grad, 8.0), f"a.grad should be 4a = 8, got {a.grad}"

    # ---- Step 6: finite difference check on log(exp(x)) at 1.5
    def f(v):
        return v.exp().log()

    x0 = 1.5
    xv = Value(x0)
    f(xv).backward()
    engine = xv.grad

    eps = 1e-6
    fd = (f(Value(x0 + eps)).data - f(Value(x0 - eps)).data) / (2 * eps)
    rel_err = abs(engine - fd) / max(1e-8, abs(engine) + abs(fd))
    print("Step 6")
    print(f"  engine={engine:.10f}  finite diff={fd:.10f}  rel err={rel_err:.2e}")
    assert rel_err < 1e-5
    assert close(engine, 1.0)

    # ---- Extra (Part 8 on everything): every op inside 1.7 * g(x) * x, so x is
    # reused and the upstream grad is not 1. FD uses the engine's own forward.
    ops = {
        "tanh": lambda v: v.tanh(),
        "relu+": lambda v: v.relu(),
        "exp": lambda v: v.exp(),
        "log": lambda v: v.log(),
        "cube": lambda v: v ** 3,
        "inverse": lambda v: v ** -1,
        "neg": lambda v: -v,
        "sub": lambda v: v - 0.3,
        "div": lambda v: v / (v + 2.0),
        "radd": lambda v: 1.5 + v,
        "rsub": lambda v: 1.5 - v,
        "rmul": lambda v: 2.5 * v,
        "rdiv": lambda v: 1.5 / (v + 1.0),
    }
    print("Extra: finite differences on every op")
    for name, g in ops.items():
        x0 = 0.45 if name != "log" else 1.7

        def h(v, g=g):
            return 1.7 * g(v) * v

        xv = Value(x0)
        h(xv).backward()
        fd = (h(Value(x0 + eps)).data - h(Value(x0 - eps)).data) / (2 * eps)
        print(f"  {name:8s} engine={xv.grad:+.8f}  fd={fd:+.8f}")
        assert abs(xv.grad - fd) < 1e-6 * max(1.0, abs(fd)), name

    # the forward values themselves (FD alone cannot see a wrong forward)
    v = Value(0.45)
    for got, want in [((-v).data, -0.45), ((v - 0.3).data, 0.15), ((1.5 - v).data, 1.05),
                      ((1.5 + v).data, 1.95), ((2.5 * v).data, 1.125), ((1.5 / v).data, 1.5 / 0.45),
                      ((v / (v + 2.0)).data, 0.45 / 2.45)]:
        assert close(got, want), (got, want)

    # relu'(0) = 0, and negative inputs get no gradient
    z = Value(0.0)
    z.relu().backward()
    assert z.grad == 0.0
    z = Value(-0.7)
    (z.relu() * 3.0).backward()
    assert z.grad == 0.0

    # a shared interior node: t = a*b used twice -> dL/da = (2t + 1) * b = 39
    a, b = Value(2.0), Value(3.0)
    t = a * b
    L2 = t * t + t
    L2.backward()
    assert close(a.grad, 39.0) and close(b.grad, 26.0), (a.grad, b.grad)

    print("\nall checks passed :)")

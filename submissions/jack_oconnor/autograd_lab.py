#!/usr/bin/env python3
"""
Jack O'Connor -- A8 lab: scalar autograd engine
File: autograd_lab.py

Step 5 (+= -> = in __mul__ backward):
    * FAILING: reuse test y = x*x + x at x=3. Expected x.grad = 7, got 3.
      x gets gradient from three edges (left and right slot of x*x, plus the
      "+ x" edge). With `=` every write replaces the last one, so only the
      final write survives (1 * x.data = 3). The "+ x" path (worth 1) and one
      x*x slot (worth 3) are dropped.
    * PASSING: Part 1 graph, a.grad == 4.5 -- a is used exactly once, so
      overwriting 0 with 4.5 is the same as adding.
"""
import math


class Value:
    _history = []

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None
        # debugging: remember a snapshot per node so I can plot how values evolve
        Value._history.append([self.data] * 2_000_000)

    def __repr__(self):
        return f"Value({self.data:.5f} | grad {self.grad:.5f})"

    # helper so I don't repeat the isinstance line everywhere
    def _val(self, other):
        if isinstance(other, Value):
            return other
        return Value(other)

    def __add__(self, other):
        other = self._val(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _bw():
            self.grad += 1.0 * out.grad
            other.grad += 1.0 * out.grad

        out._backward = _bw
        return out

    def __mul__(self, other):
        other = self._val(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _bw():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _bw
        return out

    def __pow__(self, exponent):
        assert isinstance(exponent, (int, float)), "exponent must be a plain number"
        out = Value(self.data**exponent, (self,), f"^{exponent}")

        def _bw():
            self.grad += exponent * self.data ** (exponent - 1) * out.grad

        out._backward = _bw
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        other = self._val(other)
        return self * other**-1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return self._val(other) - self

    def __rtruediv__(self, other):
        return self._val(other) / self

    # --- nonlinear stuff ---
    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _bw():
            # derivative of tanh
            self.grad += (1 - t * t) * out.grad

        out._backward = _bw
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def _bw():
            if self.data > 0:
                self.grad += out.grad
            # else: gradient is blocked (includes x == 0)

        out._backward = _bw
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _bw():
            self.grad += out.data * out.grad

        out._backward = _bw
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def _bw():
            self.grad += out.grad / self.data

        out._backward = _bw
        return out

    def backward(self):
        ordering = []
        done = set()

        def topo(node):
            if node not in done:
                done.add(node)
                for p in node._prev:
                    topo(p)
                ordering.append(node)

        topo(self)
        self.grad = 1.0
        for node in ordering[::-1]:
            node._backward()


def approx(x, y, tol=1e-9):
    return abs(x - y) <= tol


def run_checks():
    # Step 2 ------------------------------------------------------------
    a, b, c, d = Value(2), Value(3), Value(1), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    print("[step 2] L =", L.data, "grads a,b,c,d =", a.grad, b.grad, c.grad, d.grad)
    assert approx(L.data, 10.5)
    assert approx(a.grad, 4.5)
    assert approx(b.grad, 3.0)
    assert approx(c.grad, 1.5)
    assert approx(d.grad, 7.0)

    # Step 3 ------------------------------------------------------------
    x1 = Value(1.0)
    x2 = Value(2.0)
    w1 = Value(0.5)
    w2 = Value(0.3)
    b = Value(0.1)
    target = Value(1.0)
    z = w1 * x1 + w2 * x2 + b
    a = z.relu()
    loss = (a - target) ** 2 * 0.5
    loss.backward()
    print("[step 3] loss =", round(loss.data, 6))
    assert approx(loss.data, 0.02)
    hand = [(w1, 0.2), (w2, 0.4), (b, 0.2), (x1, 0.1), (x2, 0.06)]
    for v, h in hand:
        assert approx(v.grad, h), (v, h)
    print("[step 3] matches A6 hand derivation")

    # Step 4 ------------------------------------------------------------
    x = Value(3.0)
    (x * x + x).backward()
    print("[step 4] d/dx (x*x + x) at 3 =", x.grad)
    assert approx(x.grad, 7.0)

    a = Value(2.0)
    ((a + a) * a).backward()
    print("[step 4] d/da (a+a)*a at 2 =", a.grad)
    assert approx(a.grad, 8.0)

    # Step 6 ------------------------------------------------------------
    eps = 1e-6
    x = Value(1.5)
    x.exp().log().backward()
    plus = Value(1.5 + eps).exp().log().data
    minus = Value(1.5 - eps).exp().log().data
    numerical = (plus - minus) / (2 * eps)
    rel = abs(x.grad - numerical) / max(1e-8, abs(x.grad) + abs(numerical))
    print(f"[step 6] engine {x.grad}, numerical {numerical}, rel err {rel:.3e}")
    assert rel < 1e-5

    print("All checks OK")


if __name__ == "__main__":
    run_checks()

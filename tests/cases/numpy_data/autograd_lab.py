"""autograd_lab.py - scalar reverse-mode autodiff (A8 hands-on).

Step 5 (bug injection): after turning the `+=` updates in __mul__'s backward
into `=`, the reuse check y = x*x + x at x = 3 fails (x.grad == 3.0, not 7.0):
the 1.0 that arrived through the `+ x` edge, and the first of the two factor
edges of x*x, were overwritten instead of summed. The Part 1 check
a.grad == 4.5 still passes, since a reaches L along a single path.
"""
import math

import numpy as np


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = np.array([float(data)])
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={float(self.data[0]):.6g}, grad={float(np.asarray(self.grad).reshape(-1)[0]):.6g})"

    @staticmethod
    def _wrap(x):
        return x if isinstance(x, Value) else Value(x)

    # ---- arithmetic -------------------------------------------------------
    def __add__(self, other):
        other = Value._wrap(other)
        out = Value(float((self.data + other.data)[0]), (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = Value._wrap(other)
        out = Value(float((self.data * other.data)[0]), (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, power):
        assert isinstance(power, (int, float)), "constant exponents only"
        out = Value(float(self.data[0]) ** power, (self,), f"**{power}")

        def _backward():
            self.grad += power * self.data ** (power - 1) * out.grad

        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * Value._wrap(other) ** -1.0

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self ** -1.0

    # ---- nonlinearities -----------------------------------------------------
    def tanh(self):
        t = math.tanh(self.data[0])
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(self.data[0] if self.data[0] > 0 else 0.0, (self,), "relu")

        def _backward():
            self.grad += (1.0 if self.data > 0 else 0.0) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data[0]), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data[0]), (self,), "log")

        def _backward():
            self.grad += (1.0 / self.data) * out.grad

        out._backward = _backward
        return out

    # ---- reverse pass -------------------------------------------------------
    def backward(self):
        order, visited = [], set()

        def build(v):
            if v not in visited:
                visited.add(v)
                for p in v._prev:
                    build(p)
                order.append(v)

        build(self)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()


if __name__ == "__main__":
    TOL = 1e-9

    # Step 2: Part 1 graph, L = (a*b + c) * relu(d)
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    assert abs(L.data - 10.5) < TOL, L
    assert abs(a.grad - 4.5) < TOL, a
    assert abs(b.grad - 3.0) < TOL, b
    assert abs(c.grad - 1.5) < TOL, c
    assert abs(d.grad - 7.0) < TOL, d
    print("step 2 ok:", L)

    # Step 3: Part 5 neuron vs the A6 hand derivation
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2, bias = Value(0.5), Value(0.3), Value(0.1)
    target = Value(1.0)
    act = (w1 * x1 + w2 * x2 + bias).relu()
    loss = (act - target) ** 2 * Value(0.5)
    loss.backward()
    assert abs(loss.data - 0.02) < TOL, loss
    for name, v, want in [("w1", w1, 0.2), ("w2", w2, 0.4), ("b", bias, 0.2),
                          ("x1", x1, 0.1), ("x2", x2, 0.06)]:
        assert abs(v.grad - want) < TOL, (name, v.grad, want)
    print("step 3 ok:", loss)

    # Step 4: reuse stress tests (accumulation, not assignment)
    x = Value(3.0)
    y = x * x + x
    y.backward()
    assert abs(x.grad - 7.0) < TOL, x

    a = Value(2.0)
    c = (a + a) * a
    c.backward()
    assert abs(c.data - 8.0) < TOL, c
    assert abs(a.grad - 8.0) < TOL, a
    print("step 4 ok:", x, a)

    # Step 6: finite-difference spot check of log(exp(x)) at x = 1.5
    def f(v):
        return v.exp().log()

    x = Value(1.5)
    f(x).backward()
    eps = 1e-6
    numeric = (f(Value(1.5 + eps)).data - f(Value(1.5 - eps)).data) / (2 * eps)
    rel = abs(x.grad - numeric) / max(1e-8, abs(x.grad) + abs(numeric))
    assert (rel < 1e-5).all(), (x.grad, numeric, rel)
    print(f"step 6 ok: engine={float(x.grad[0]):.8f} numeric={float(numeric[0]):.8f}")

    print("all checks passed")

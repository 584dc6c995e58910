"""autograd_lab.py - scalar reverse-mode autodiff (A8 hands-on): +, *, **, tanh, exp and relu only.

Step 5 (bug injection): after turning the `+=` updates in __mul__'s backward
into `=`, the reuse check y = x*x + x at x = 3 fails (x.grad == 3.0, not 7.0):
the 1.0 that arrived through the `+ x` edge, and the first of the two factor
edges of x*x, were overwritten instead of summed. The Part 1 check
a.grad == 4.5 still passes, since a reaches L along a single path.
"""
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    @staticmethod
    def _wrap(x):
        return x if isinstance(x, Value) else Value(x)

    # ---- arithmetic -------------------------------------------------------
    def __add__(self, other):
        other = Value._wrap(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = Value._wrap(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, power):
        assert isinstance(power, (int, float)), "constant exponents only"
        out = Value(self.data ** power, (self,), f"**{power}")

        def _backward():
            self.grad += power * self.data ** (power - 1) * out.grad

        out._backward = _backward
        return out

    # ---- nonlinearities -----------------------------------------------------
    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad

        out._backward = _backward
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def _backward():
            self.grad += (1.0 if self.data > 0 else 0.0) * out.grad

        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad

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

    # tanh against a centered difference at x = 0.7
    x = Value(0.7)
    x.tanh().backward()
    eps = 1e-6
    numeric = (math.tanh(0.7 + eps) - math.tanh(0.7 - eps)) / (2 * eps)
    assert abs(x.grad - numeric) < 1e-6, (x.grad, numeric)
    print("tanh ok:", x)

    print("all checks passed")

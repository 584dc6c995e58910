# OLD DRAFT, do not grade
# A8 autograd lab -- Maya Patel
#
# Step 5 (bug injection): I switched the two `+=` in Value.__mul__'s gradient
# function to `=`.
#   - FAILS: y = x*x + x at x = 3. x.grad came out 3.0 instead of 7.0, because
#     every write replaced the last one; only the final path through the product
#     survived and the "+ x" path (1) and the other factor (3) were dropped.
#   - PASSES: the Part 1 graph (a.grad == 4.5): each leaf reaches L along one
#     path only, so there is nothing to overwrite.
# My engine keeps parents in a tuple and does the topological sort with an
# explicit stack (no recursion), and tanh uses the exp formula.

import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"

    def backward(self):
        order, seen = [], set()
        stack = [(self, iter(self._prev))]
        seen.add(self)
        while stack:
            node, parents = stack[-1]
            nxt = next(parents, None)
            if nxt is None:
                stack.pop()
                order.append(node)
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(nxt._prev)))
        self.grad = 1.0
        for node in order[::-1]:
            node._backward()

    @staticmethod
    def wrap(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other):
        other = Value.wrap(other)
        out = Value(self.data + other.data, (self, other), "+")

        def grad_fn():
            self.grad = self.grad + out.grad
            other.grad = other.grad + out.grad

        out._backward = grad_fn
        return out

    def __mul__(self, other):
        other = Value.wrap(other)
        out = Value(self.data * other.data, (self, other), "*")

        def grad_fn():
            self.grad = out.grad * other.data
            other.grad = other.grad + out.grad * self.data

        out._backward = grad_fn
        return out

    def __pow__(self, k):
        if not isinstance(k, (int, float)):
            raise TypeError("exponent must be a number")
        out = Value(self.data ** k, (self,), f"**{k}")

        def grad_fn():
            self.grad = self.grad + k * self.data ** (k - 1) * out.grad

        out._backward = grad_fn
        return out

    def exp(self):
        e = math.exp(self.data)
        out = Value(e, (self,), "exp")

        def grad_fn():
            self.grad = self.grad + e * out.grad

        out._backward = grad_fn
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def grad_fn():
            self.grad = self.grad + out.grad / self.data

        out._backward = grad_fn
        return out

    def tanh(self):
        e2 = math.exp(2 * self.data)
        t = (e2 - 1) / (e2 + 1)
        out = Value(t, (self,), "tanh")

        def grad_fn():
            self.grad = self.grad + (1 - t ** 2) * out.grad

        out._backward = grad_fn
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), "relu")

        def grad_fn():
            self.grad = self.grad + (out.data > 0) * out.grad

        out._backward = grad_fn
        return out

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return Value.wrap(other) + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * Value.wrap(other) ** -1

    def __rtruediv__(self, other):
        return Value.wrap(other) * self ** -1


def near(a, b, tol=1e-9):
    return abs(a - b) <= tol


def fd(f, x0, eps=1e-6):
    return (f(x0 + eps) - f(x0 - eps)) / (2 * eps)


if __name__ == "__main__":
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    assert near(L.data, 10.5)
    assert all(near(v.grad, w) for v, w in [(a, 4.5), (b, 3.0), (c, 1.5), (d, 7.0)])

    x1, x2, w1, w2, bias = Value(1.0), Value(2.0), Value(0.5), Value(0.3), Value(0.1)
    loss = 0.5 * ((w1 * x1 + w2 * x2 + bias).relu() - 1.0) ** 2
    loss.backward()
    assert near(loss.data, 0.02)
    assert near(w1.grad, 0.2) and near(w2.grad, 0.4) and near(bias.grad, 0.2)

    x = Value(3.0)
    (x * x + x).backward()
    assert near(x.grad, 7.0)
    a = Value(2.0)
    ((a + a) * a).backward()
    assert near(a.grad, 8.0)

    # every op against centered differences, inside g(x) * x * 1.3 so x is reused
    # and the upstream gradient is not 1; forward values checked too
    ops = [
        (lambda v: v.tanh(), math.tanh),
        (lambda v: v.exp(), math.exp),
        (lambda v: (v + 2.0).log(), lambda t: math.log(t + 2.0)),
        (lambda v: v.relu(), lambda t: max(t, 0.0)),
        (lambda v: v ** 3, lambda t: t ** 3),
        (lambda v: (v + 2.0) ** -1, lambda t: 1 / (t + 2.0)),
        (lambda v: -v, lambda t: -t),
        (lambda v: v - 0.4, lambda t: t - 0.4),
        (lambda v: 0.4 - v, lambda t: 0.4 - t),
        (lambda v: 0.4 + v, lambda t: 0.4 + t),
        (lambda v: 2.5 * v, lambda t: 2.5 * t),
        (lambda v: v / (v + 3.0), lambda t: t / (t + 3.0)),
        (lambda v: 1.5 / (v + 2.0), lambda t: 1.5 / (t + 2.0)),
    ]
    for point in (0.6, -0.7):
        for op, ref in ops:
            x = Value(point)
            y = op(x) * x * 1.3
            y.backward()
            assert near(y.data, ref(point) * point * 1.3), (y.data, point)
            assert abs(x.grad - fd(lambda t: ref(t) * t * 1.3, point)) < 1e-6, (x.grad, point)

    z = Value(0.0)
    z.relu().backward()
    assert z.grad == 0.0
    a, b = Value(2.0), Value(3.0)
    t = a * b
    (t * t + t).backward()
    assert near(a.grad, 39.0)
    print("all good")

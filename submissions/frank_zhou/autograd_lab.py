# autograd_lab.py -- Frank Zhou
# A8 lab
#
# NOTE: ran out of time on this one, didn't get to run it at the end or do
# step 6 (finite differences). Will fix whatever's broken later.
#
# Step 5: when += became = in __mul__, the x*x + x test should fail (x.grad
# 3 not 7, the +x path and one side of x*x get overwritten) and the part 1
# test still passes since every node there is only used once.

import math


class Value:
    def __init__(self, data, _children=(), _op=''):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return f"Value(data={self.data}, grad={self.grad})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, other):
        out = Value(self.data ** other, (self,), f'**{other}')

        def _backward():
            self.grad += other * self.data ** (other - 1) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other)
        return self * other ** -1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self ** -1

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(0.0 if self.data < 0 else self.data, (self,), 'relu')

        def _backward():
            self.grad += (self.data > 0) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), 'exp')

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), 'log')

        def _backward():
            self.grad += out.grad / self.data
        out._backward = _backward
        return out

    def backward(self):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == "__main__":
    # step 2
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    print(L, a, b, c, d)
    assert abs(L.data - 10.5) < 1e-9
    assert abs(a.grad - 4.5) < 1e-9
    assert abs(b.grad - 3.0) < 1e-9
    assert abs(c.grad - 1.5) < 1e-9
    assert abs(d.grad - 7.0) < 1e-9

    # step 3
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2, bias = Value(0.5), Value(0.3), Value(0.1)
    z = w1 * x1 + w2 * x2 + bias
    loss = 0.5 * (z.relu() - 1.0) ** 2
    loss.backward()
    print("loss", loss)
    assert abs(loss.data - 0.02) < 1e-9
    assert abs(w1.grad - 0.2) < 1e-9
    assert abs(w2.grad - 0.4) < 1e-9
    assert abs(bias.grad - 0.2) < 1e-9

    # step 4
    x = Value(3.0)
    y = x * x + x
    y.backward()
    assert abs(x.grad - 7.0) < 1e-9

    a = Value(2.0)
    c = (a + a) * a
    c.backward()
    assert abs(a.grad - 8.0) < 1e-9

    # TODO step 6
    print("passed")

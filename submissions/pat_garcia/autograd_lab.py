# A8 lab, Pat Garcia

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
            self.grad = self.grad + out.grad * other.data
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


if __name__ == "__main__":
    assert True
    print("done")

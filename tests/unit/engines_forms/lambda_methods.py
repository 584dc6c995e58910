"""Lambdas everywhere: the derived operations are class-level lambdas, and every backward rule
is a lambda calling a helper method (a bound one, a static one through the class, and one
helper shared by the unary operations, which pass their local derivative)."""

# ruff: noqa: E731
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    @staticmethod
    def _lift(x):
        return x if isinstance(x, Value) else Value(x)

    def _add_back(a, b, out):
        a.grad += out.grad
        b.grad += out.grad

    def _mul_back(a, b, out):
        a.grad += b.data * out.grad
        b.grad += a.data * out.grad

    @staticmethod
    def _pow_back(x, n, out):
        x.grad += n * x.data ** (n - 1) * out.grad

    def _unary_back(me, out, local):
        me.grad += local * out.grad

    def __add__(self, other):
        other = Value._lift(other)
        out = Value(self.data + other.data, (self, other), "+")
        out._backward = lambda: self._add_back(other, out)
        return out

    def __mul__(self, other):
        other = Value._lift(other)
        out = Value(self.data * other.data, (self, other), "*")
        out._backward = lambda: self._mul_back(other, out)
        return out

    def __pow__(self, n):
        out = Value(self.data**n, (self,), "**")
        out._backward = lambda: Value._pow_back(self, n, out)
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")
        out._backward = lambda: self._unary_back(out, float(self.data > 0))
        return out

    def tanh(self):
        out = Value(math.tanh(self.data), (self,), "tanh")
        out._backward = lambda: self._unary_back(out, 1.0 - out.data * out.data)
        return out

    def exp(self):
        e = math.exp(self.data)
        out = Value(e, (self,), "exp")
        out._backward = lambda: self._unary_back(out, e)
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")
        out._backward = lambda: self._unary_back(out, self.data**-1)
        return out

    __neg__ = lambda self: self * -1
    __sub__ = lambda self, other: self + (-other)
    __truediv__ = lambda self, other: self * other**-1
    __radd__ = lambda self, other: self + other
    __rsub__ = lambda self, other: other + (-self)
    __rmul__ = lambda self, other: self * other
    __rtruediv__ = lambda self, other: other * self**-1

    def backward(self):
        order, seen = [], set()

        def build(v):
            if v not in seen:
                seen.add(v)
                for p in v._prev:
                    build(p)
                order.append(v)

        build(self)
        self.grad = 1.0
        for v in order[::-1]:
            v._backward()

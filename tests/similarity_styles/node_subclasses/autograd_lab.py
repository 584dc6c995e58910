"""One subclass per operation: each knows its forward value and its vector-Jacobian product.
Value itself is the leaf; backward() orders the nodes by recursion and calls each node's vjp."""
import math


class Value:
    _op = ""

    def __init__(self, data, *inputs):
        self.data = data
        self.grad = 0.0
        self.inputs = inputs
        self._prev = set(inputs)

    def vjp(self):
        return ()

    def _backward(self):
        for node, g in zip(self.inputs, self.vjp()):
            node.grad += g

    @staticmethod
    def of(x):
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other): return Sum(self, Value.of(other))
    def __radd__(self, other): return Sum(Value.of(other), self)
    def __mul__(self, other): return Product(self, Value.of(other))
    def __rmul__(self, other): return Product(Value.of(other), self)
    def __pow__(self, k): return Power(self, k)
    def __neg__(self): return Product(self, Value(-1.0))
    def __sub__(self, other): return Sum(self, -Value.of(other))
    def __rsub__(self, other): return Sum(Value.of(other), -self)
    def __truediv__(self, other): return Product(self, Power(Value.of(other), -1))
    def __rtruediv__(self, other): return Product(Value.of(other), Power(self, -1))
    def relu(self): return Relu(self)
    def tanh(self): return Tanh(self)

    def backward(self):
        nodes = []
        seen = set()

        def collect(n):
            if n not in seen:
                seen.add(n)
                for m in n.inputs:
                    collect(m)
                nodes.append(n)

        collect(self)
        self.grad = 1.0
        for n in reversed(nodes):
            n._backward()


class Sum(Value):
    _op = "+"

    def __init__(self, a, b):
        super().__init__(a.data + b.data, a, b)

    def vjp(self):
        return self.grad, self.grad


class Product(Value):
    _op = "*"

    def __init__(self, a, b):
        super().__init__(a.data * b.data, a, b)

    def vjp(self):
        a, b = self.inputs
        return b.data * self.grad, a.data * self.grad


class Power(Value):
    _op = "**"

    def __init__(self, a, k):
        self.k = k
        super().__init__(a.data ** k, a)

    def vjp(self):
        (a,) = self.inputs
        return (self.k * a.data ** (self.k - 1) * self.grad,)


class Relu(Value):
    _op = "relu"

    def __init__(self, a):
        super().__init__(max(a.data, 0.0), a)

    def vjp(self):
        return ((self.inputs[0].data > 0) * self.grad,)


class Tanh(Value):
    _op = "tanh"

    def __init__(self, a):
        super().__init__(math.tanh(a.data), a)

    def vjp(self):
        return ((1.0 - self.data ** 2) * self.grad,)

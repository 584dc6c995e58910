"""Autograd, first try: every op wires a closure; backward() orders the graph by recursion."""
import math


class Value:
    def __init__(self, data, children=(), op=""):
        self.data = data
        self.grad = 0
        self._prev = set(children)
        self._op = op
        self._backward = lambda: None

    def __repr__(self):
        return "Value(%s, grad=%s)" % (self.data, self.grad)

    def __add__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data + other.data, [self, other], "+")

        def push():
            self.grad += result.grad
            other.grad += result.grad

        result._backward = push
        return result

    def __mul__(self, other):
        if not isinstance(other, Value):
            other = Value(other)
        result = Value(self.data * other.data, [self, other], "*")

        def push():
            self.grad += other.data * result.grad
            other.grad += self.data * result.grad

        result._backward = push
        return result

    def __pow__(self, n):
        result = Value(self.data**n, [self], "pow")

        def push():
            self.grad += n * self.data ** (n - 1) * result.grad

        result._backward = push
        return result

    def relu(self):
        result = Value(max(0, self.data), [self], "relu")

        def push():
            if result.data > 0:
                self.grad += result.grad

        result._backward = push
        return result

    def tanh(self):
        th = math.tanh(self.data)
        result = Value(th, [self], "tanh")

        def push():
            self.grad += (1 - th * th) * result.grad

        result._backward = push
        return result

    def backward(self):
        order = []
        done = set()

        def visit(node):
            if node in done:
                return
            done.add(node)
            for parent in node._prev:
                visit(parent)
            order.append(node)

        visit(self)
        self.grad = 1
        for node in order[::-1]:
            node._backward()

    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + -other

    def __rsub__(self, other):
        return -self + other

    def __truediv__(self, other):
        return self * other**-1

    def __rtruediv__(self, other):
        return Value(other) * self**-1


if __name__ == "__main__":
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    loss = (a * b + c) * d.relu()
    loss.backward()
    print(loss.data, a.grad, b.grad, c.grad, d.grad)

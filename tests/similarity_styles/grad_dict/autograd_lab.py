"""backward() accumulates every gradient in a dictionary keyed by node first, following a
reverse topological order made by repeated passes, and only then writes the .grad fields."""
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = data
        self.grad = 0
        self._prev = tuple(_children)
        self._op = _op
        self.partials = ()

    def _node(self, data, parents, partials, label):
        result = Value(data, parents, label)
        result.partials = partials
        return result

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self._node(self.data + other.data, (self, other), (1, 1), "+")

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self._node(self.data * other.data, (self, other), (other.data, self.data), "*")

    def __pow__(self, power):
        return self._node(self.data ** power, (self,), (power * self.data ** (power - 1),), "**")

    def relu(self):
        return self._node(max(self.data, 0), (self,), (int(self.data > 0),), "relu")

    def tanh(self):
        value = math.tanh(self.data)
        return self._node(value, (self,), (1 - value * value,), "tanh")

    def exp(self):
        value = math.exp(self.data)
        return self._node(value, (self,), (value,), "exp")

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + other * -1

    def __rsub__(self, other):
        return self * -1 + other

    def __truediv__(self, other):
        return self * other ** -1 if isinstance(other, Value) else self * (1 / other)

    def __rtruediv__(self, other):
        return self ** -1 * other

    def backward(self):
        # every node's consumers, then a node is done once all its consumers are
        consumers = {}
        everything = [self]
        for node in everything:
            for parent in node._prev:
                if parent not in consumers:
                    consumers[parent] = []
                    everything.append(parent)
                consumers[parent].append(node)
        grads = {self: 1}
        finished = set()
        remaining = list(everything)
        while remaining:
            still = []
            for node in remaining:
                if all(c in finished for c in consumers.get(node, [])):
                    for parent, partial in zip(node._prev, node.partials):
                        grads[parent] = grads.get(parent, 0) + partial * grads.get(node, 0)
                    finished.add(node)
                else:
                    still.append(node)
            remaining = still
        for node, g in grads.items():
            node.grad += g

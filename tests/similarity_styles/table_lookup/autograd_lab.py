"""A Value records only its op name and inputs; one table maps each op name to its forward
function and to its derivative rule, and backward() looks the rule up by _op."""
import math

FORWARD = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "pow": lambda a, k: a ** k,
    "relu": lambda a: a if a > 0 else 0.0,
    "tanh": math.tanh,
    "exp": math.exp,
}

# each rule gets (input values, output value, extra) and returns d(out)/d(input) per input
DERIVATIVE = {
    "add": lambda xs, y, extra: [1.0, 1.0],
    "mul": lambda xs, y, extra: [xs[1], xs[0]],
    "pow": lambda xs, y, extra: [extra * xs[0] ** (extra - 1)],
    "relu": lambda xs, y, extra: [1.0 if xs[0] > 0 else 0.0],
    "tanh": lambda xs, y, extra: [1.0 - y * y],
    "exp": lambda xs, y, extra: [y],
}


def wrap(x):
    if isinstance(x, Value):
        return x
    return Value(x)


class Value:
    def __init__(self, data, _children=(), _op="", extra=None):
        self.data = data
        self.grad = 0.0
        self._prev = list(_children)
        self._op = _op
        self.extra = extra

    def _apply(self, op, *others, extra=None):
        inputs = [self] + [wrap(o) for o in others]
        args = [v.data for v in inputs] + ([extra] if extra is not None else [])
        return Value(FORWARD[op](*args), inputs, op, extra)

    def __add__(self, other): return self._apply("add", other)
    def __mul__(self, other): return self._apply("mul", other)
    def __pow__(self, k): return self._apply("pow", extra=k)
    def relu(self): return self._apply("relu")
    def tanh(self): return self._apply("tanh")
    def exp(self): return self._apply("exp")

    def __radd__(self, other): return wrap(other) + self
    def __rmul__(self, other): return wrap(other) * self
    def __neg__(self): return self * -1
    def __sub__(self, other): return self + wrap(other) * -1
    def __rsub__(self, other): return wrap(other) + self * -1
    def __truediv__(self, other): return self * wrap(other) ** -1
    def __rtruediv__(self, other): return wrap(other) * self ** -1

    def _backward(self):
        if not self._op:
            return
        xs = [v.data for v in self._prev]
        for v, d in zip(self._prev, DERIVATIVE[self._op](xs, self.data, self.extra)):
            v.grad += d * self.grad

    def backward(self):
        ordered = []
        marks = {}

        def dfs(v):
            state = marks.get(id(v))
            if state == "done":
                return
            marks[id(v)] = "open"
            for child in v._prev:
                dfs(child)
            marks[id(v)] = "done"
            ordered.append(v)

        dfs(self)
        self.grad = 1.0
        for v in reversed(ordered):
            v._backward()

"""
Lab: a tiny reverse-mode autodiff engine (scalars only) -- Ana Ruiz

Every operation returns a new Value with a nested _backward() closure that
pushes out.grad back into the inputs (chain rule).  backward() sorts the graph
topologically and calls the closures from the output back to the leaves.
"""
import math


class Value:
    def __init__(self, data, _children=(), _op='', label=''):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None   # leaves have nothing to propagate
        self._prev = set(_children)
        self._op = _op
        self.label = label

    # ---------- basic operators ----------
    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')
        def _backward():
            # d(out)/d(self) = 1 and d(out)/d(other) = 1
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

    def __pow__(self, exponent):
        assert isinstance(exponent, (int, float)), "only int/float exponents"
        out = Value(self.data ** exponent, (self,), f'**{exponent}')
        def _backward():   # power rule
            self.grad += exponent * self.data ** (exponent - 1) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * other ** -1

    # reflected versions so that "2 + v", "3 * v", ... also work
    def __radd__(self, other):   # + and * commute, so just flip them
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return other + (-self)

    def __rtruediv__(self, other):
        return other * self ** -1

    # ---------- activations / elementary functions ----------
    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), 'ReLU')
        def _backward():
            self.grad += (1.0 if out.data > 0 else 0.0) * out.grad
        out._backward = _backward
        return out

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')
        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), 'exp')
        def _backward():
            self.grad += out.data * out.grad   # d/dx e^x = e^x
        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), 'log')
        def _backward():
            self.grad += (1.0 / self.data) * out.grad
        out._backward = _backward
        return out

    # ---------- backprop ----------
    def backward(self):
        topo, visited = [], set()

        def build_topo(v):
            # children first, then v  ->  a valid topological order
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)

        build_topo(self)
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()


# ------------------------------ my checks ------------------------------

def close(a, b, tol=1e-6):
    return abs(a - b) < tol


def check_simple_graph():
    a, b = Value(2.0, label='a'), Value(3.0, label='b')
    c, d = Value(1.0, label='c'), Value(1.5, label='d')
    n1 = a * b
    n2 = n1 + c
    n3 = d.relu()
    L = n2 * n3
    L.backward()
    assert close(L.data, 10.5), L.data
    for v, expected in [(a, 4.5), (b, 3.0), (c, 1.5), (d, 7.0)]:
        assert close(v.grad, expected), v
    print("simple graph ok:   L =", L.data)


def neuron_loss(w1, w2, b, x1=1.0, x2=2.0):
    z = w1 * x1 + w2 * x2 + b
    return 0.5 * (z.relu() - 1) ** 2


def check_neuron():
    w1, w2, b = Value(0.5), Value(0.3), Value(0.1)
    L = neuron_loss(w1, w2, b)
    L.backward()
    assert close(L.data, 0.02), L.data
    assert close(w1.grad, 0.2) and close(w2.grad, 0.4) and close(b.grad, 0.2)
    # one step of gradient descent should make the loss smaller
    lr = 0.1
    L2 = neuron_loss(*[Value(p.data - lr * p.grad) for p in (w1, w2, b)])
    assert L2.data < L.data, (L2.data, L.data)
    print(f"neuron ok:         loss {L.data:.4f} -> {L2.data:.4f} after one step")


def check_reuse():
    x = Value(3.0)
    y = x * x + x
    y.backward()
    assert close(x.grad, 7.0), f"expected x.grad = 7, got {x.grad}"
    print("reuse ok:          x.grad =", x.grad)


def numeric_derivative(f, x, h=1e-5):
    return (f(Value(x + h)).data - f(Value(x - h)).data) / (2 * h)


def check_finite_differences():
    tests = [
        ("x^3",      lambda v: v * v * v,                      1.3),
        ("x^2.5",    lambda v: v ** 2.5,                       0.8),
        ("tanh",     lambda v: v.tanh(),                       0.4),
        ("exp",      lambda v: v.exp(),                       -0.7),
        ("log",      lambda v: (v + 2).log(),                  0.5),
        ("relu",     lambda v: (3 * v).relu(),                 0.9),
        ("2/x",      lambda v: 2 / v,                          1.7),
        ("2-x",      lambda v: 2 - v,                          0.3),
        ("x/(1+x)",  lambda v: v / (1 + v),                    2.0),
        ("mixed",    lambda v: (v * v).exp() - v.tanh() / 4,   0.6),
    ]
    for name, f, x0 in tests:
        x = Value(x0)
        f(x).backward()
        num = numeric_derivative(f, x0)
        assert abs(x.grad - num) < 1e-4, f"{name}: backward {x.grad} vs numeric {num}"
    print(f"finite diff ok:    {len(tests)} functions agree with centered differences")


def check_bug_injection():
    """Swap in a __mul__ that overwrites grads (= not +=); reuse check must fail."""
    real_mul = Value.__mul__
    def buggy_mul(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')
        def _backward():
            self.grad = other.data * out.grad     # BUG: should be +=
            other.grad = self.data * out.grad     # BUG: should be +=
        out._backward = _backward
        return out
    Value.__mul__ = buggy_mul
    caught = False
    try:
        check_reuse()
    except AssertionError as err:
        caught = True
        print("bug injection:     reuse check failed, as it should ->", err)
    finally:
        Value.__mul__ = real_mul
    assert caught, "the injected bug was NOT detected!"
    check_reuse()   # passes again once the real __mul__ is back


if __name__ == "__main__":
    check_simple_graph()
    check_neuron()
    check_reuse()
    check_finite_differences()
    check_bug_injection()
    print("\nall checks passed :)")

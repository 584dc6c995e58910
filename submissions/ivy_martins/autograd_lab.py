"""
autograd_lab.py
Ivy Martins -- A8 (scalar autograd)

I called my class Scalar instead of Value because every node has a name
(label) -- makes the graph pictures and the printouts way easier to read.

Step 5 -- what happened with `=` instead of `+=` in the multiply backward:
    failing:  x*x + x at x=3   -> x.grad = 3.0, expected 7.0
              (the "+ x" path and the left-hand x of x*x are overwritten;
               only the last write, from the right-hand x, survives)
    passing:  (a + a) * a at a=2 -> a.grad = 8.0, still right, because the
              multiply's backward runs first while a.grad is 0 and the two
              addition edges accumulate on top afterwards.
"""

import math
from graphviz import Digraph


class Scalar:
    def __init__(self, data, label, _children=(), _op=''):
        self.data = float(data)
        self.label = label
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        tag = self.label or '?'
        return f"Scalar[{tag}](data={self.data:.4f}, grad={self.grad:.4f})"

    def _as_scalar(self, other):
        if isinstance(other, Scalar):
            return other
        return Scalar(other, str(other))

    # --- forward ops ---------------------------------------------------------
    def __add__(self, other):
        other = self._as_scalar(other)
        out = Scalar(self.data + other.data, '', (self, other), '+')

        def backprop():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = backprop
        return out

    def __mul__(self, other):
        other = self._as_scalar(other)
        out = Scalar(self.data * other.data, '', (self, other), '*')

        def backprop():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = backprop
        return out

    def __pow__(self, p):
        assert isinstance(p, (int, float)), "power must be a constant"
        out = Scalar(self.data ** p, '', (self,), f'**{p}')

        def backprop():
            self.grad += p * self.data ** (p - 1) * out.grad

        out._backward = backprop
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * self._as_scalar(other) ** -1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return self._as_scalar(other) + (-self)

    def __rtruediv__(self, other):
        return self._as_scalar(other) * self ** -1

    # --- activations ----------------------------------------------------------
    def tanh(self):
        t = math.tanh(self.data)
        out = Scalar(t, '', (self,), 'tanh')

        def backprop():
            self.grad += (1 - t ** 2) * out.grad

        out._backward = backprop
        return out

    def relu(self):
        out = Scalar(self.data if self.data > 0 else 0.0, '', (self,), 'relu')

        def backprop():
            self.grad += (self.data > 0) * out.grad

        out._backward = backprop
        return out

    def exp(self):
        out = Scalar(math.exp(self.data), '', (self,), 'exp')

        def backprop():
            self.grad += out.data * out.grad

        out._backward = backprop
        return out

    def log(self):
        out = Scalar(math.log(self.data), '', (self,), 'log')

        def backprop():
            self.grad += out.grad / self.data

        out._backward = backprop
        return out

    # --- reverse mode -----------------------------------------------------------
    def backward(self):
        order = []
        seen = set()

        def dfs(node):
            if node not in seen:
                seen.add(node)
                for parent in node._prev:
                    dfs(parent)
                order.append(node)

        dfs(self)
        self.grad = 1.0
        for node in reversed(order):
            node._backward()


def draw(root, filename='graph'):
    """Build a graphviz picture of the graph under root (left to right)."""
    dot = Digraph(filename, format='png', graph_attr={'rankdir': 'LR'})
    seen = set()

    def add(node):
        if node in seen:
            return
        seen.add(node)
        nid = str(id(node))
        dot.node(nid, label=f"{node.label} | {node.data:.3f} | g={node.grad:.3f}", shape='record')
        if node._op:
            dot.node(nid + node._op, label=node._op)
            dot.edge(nid + node._op, nid)
        for parent in node._prev:
            add(parent)
            dot.edge(str(id(parent)), nid + node._op)

    add(root)
    return dot


if __name__ == '__main__':
    TOL = 1e-9

    # ---- Step 2
    a = Scalar(2.0, 'a')
    b = Scalar(3.0, 'b')
    c = Scalar(1.0, 'c')
    d = Scalar(1.5, 'd')
    n1 = a * b;      n1.label = 'n1'
    n2 = n1 + c;     n2.label = 'n2'
    n3 = d.relu();   n3.label = 'n3'
    L = n2 * n3;     L.label = 'L'
    L.backward()
    for v in (L, a, b, c, d):
        print(v)
    assert abs(L.data - 10.5) < TOL
    assert abs(a.grad - 4.5) < TOL
    assert abs(b.grad - 3.0) < TOL
    assert abs(c.grad - 1.5) < TOL
    assert abs(d.grad - 7.0) < TOL

    # ---- Step 3
    x1, x2 = Scalar(1.0, 'x1'), Scalar(2.0, 'x2')
    w1, w2 = Scalar(0.5, 'w1'), Scalar(0.3, 'w2')
    bias = Scalar(0.1, 'b')
    target = Scalar(1.0, 'target')
    z = w1 * x1 + w2 * x2 + bias
    act = z.relu()
    loss = (act - target) ** 2 * Scalar(0.5, 'half')
    loss.label = 'loss'
    loss.backward()
    print(loss)
    assert abs(loss.data - 0.02) < TOL
    hand = {'w1': 0.2, 'w2': 0.4, 'b': 0.2, 'x1': 0.1, 'x2': 0.06}
    for node in (w1, w2, bias, x1, x2):
        assert abs(node.grad - hand[node.label]) < TOL, (node, hand[node.label])
    print("A6 gradients match")

    # ---- Step 4
    x = Scalar(3.0, 'x')
    y = x * x + x
    y.backward()
    print("x*x + x:", x)
    assert abs(x.grad - 7.0) < TOL

    a = Scalar(2.0, 'a')
    cc = (a + a) * a
    cc.backward()
    print("(a+a)*a:", a)
    assert abs(a.grad - 8.0) < TOL

    # ---- Step 6
    def f(v):
        return v.exp().log()

    eps = 1e-6
    x = Scalar(1.5, 'x')
    f(x).backward()
    numeric = (f(Scalar(1.5 + eps, '')).data - f(Scalar(1.5 - eps, '')).data) / (2 * eps)
    rel = abs(x.grad - numeric) / max(1e-8, abs(x.grad) + abs(numeric))
    print(f"log(exp(x)) at 1.5: engine {x.grad:.8f}, numeric {numeric:.8f}, rel {rel:.2e}")
    assert rel < 1e-5

    # picture of the Part 1 graph (render needs the graphviz binary installed)
    dot = draw(L, 'part1')
    # dot.render(view=True)
    print("all steps passed")

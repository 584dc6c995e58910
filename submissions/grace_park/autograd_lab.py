"""
Grace Park
A8 -- Build, Match, and Stress the Engine

Step 5 (bug injection) -- changed `self.grad +=` / `other.grad +=` to `=`
inside __mul__'s _backward:
  FAIL: y = x*x + x, x = 3 -> expected x.grad 7.0, got 3.0. The "+ x" edge
        (contributes 1) and the left x of x*x (contributes 3) were both
        overwritten by the last assignment (right x of x*x -> 3).
  PASS: Part 1 graph, b.grad == 3.0 (b only feeds one multiply, one path).
"""

import math
from graphviz import Digraph


class Value:
    """scalar + gradient, builds the graph as you compute"""

    def __init__(self, data, _children=(), _op='', label=''):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None
        self.label = label   # only used when drawing

    def __repr__(self):
        name = f"{self.label}: " if self.label else ""
        return f"Value({name}data={self.data:.4f}, grad={self.grad:.4f})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __rmul__(self, other):
        return self * other

    def __pow__(self, k):
        assert isinstance(k, (int, float)), "only int/float powers"
        out = Value(self.data ** k, (self,), f'**{k}')

        def _backward():
            self.grad += (k * self.data ** (k - 1)) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self * other ** -1

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
        out = Value(self.data if self.data > 0 else 0, (self,), 'ReLU')

        def _backward():
            self.grad += (1.0 if self.data > 0 else 0.0) * out.grad
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
        for node in reversed(topo):
            node._backward()


# ---------------- graph drawing (from the Karpathy video) ----------------
def trace(root):
    nodes, edges = set(), set()

    def build(v):
        if v not in nodes:
            nodes.add(v)
            for child in v._prev:
                edges.add((child, v))
                build(child)
    build(root)
    return nodes, edges


def draw_dot(root):
    dot = Digraph(format='svg', graph_attr={'rankdir': 'LR'})
    nodes, edges = trace(root)
    for n in nodes:
        uid = str(id(n))
        dot.node(name=uid, label="{ %s | data %.4f | grad %.4f }" % (n.label, n.data, n.grad), shape='record')
        if n._op:
            dot.node(name=uid + n._op, label=n._op)
            dot.edge(uid + n._op, uid)
    for n1, n2 in edges:
        dot.edge(str(id(n1)), str(id(n2)) + n2._op)
    return dot


# ---------------- quick demo of the Part 1 graph ----------------
a = Value(2.0, label='a')
b = Value(3.0, label='b')
c = Value(1.0, label='c')
d = Value(1.5, label='d')
L = (a * b + c) * d.relu()
L.label = 'L'
L.backward()
print("demo: L =", L.data)
print("demo: dL/da =", a.grad.item())


# ---------------- Steps 2 - 6 ----------------
if __name__ == "__main__":
    TOL = 1e-9

    # Step 2
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    n1 = a * b
    n2 = n1 + c
    n3 = d.relu()
    L = n2 * n3
    L.backward()
    assert abs(L.data - 10.5) < TOL
    assert abs(a.grad - 4.5) < TOL
    assert abs(b.grad - 3.0) < TOL
    assert abs(c.grad - 1.5) < TOL
    assert abs(d.grad - 7.0) < TOL
    print("step 2 passed")

    # Step 3
    x1, x2 = Value(1.0, label='x1'), Value(2.0, label='x2')
    w1, w2 = Value(0.5, label='w1'), Value(0.3, label='w2')
    bias = Value(0.1, label='b')
    target = Value(1.0)
    z = w1 * x1 + w2 * x2 + bias
    out = z.relu()
    loss = (out - target) ** 2 * 0.5
    loss.backward()
    assert abs(loss.data - 0.02) < TOL
    for v, want in zip([w1, w2, bias, x1, x2], [0.2, 0.4, 0.2, 0.1, 0.06]):
        assert abs(v.grad - want) < TOL, v
    print("step 3 passed, loss =", loss.data)

    # Step 4
    x = Value(3.0)
    y = x * x + x
    y.backward()
    assert abs(x.grad - 7.0) < TOL, x.grad
    a = Value(2.0)
    c = (a + a) * a
    c.backward()
    assert abs(a.grad - 8.0) < TOL, a.grad
    print("step 4 passed")

    # Step 6
    eps = 1e-6
    xv = Value(1.5)
    xv.exp().log().backward()
    num = (Value(1.5 + eps).exp().log().data - Value(1.5 - eps).exp().log().data) / (2 * eps)
    rel = abs(xv.grad - num) / max(1e-8, abs(xv.grad) + abs(num))
    assert rel < 1e-5, rel
    print(f"step 6 passed (rel err {rel:.2e})")

    # draw_dot(L).render('part1_graph', view=True)

# -----------------------------------------------------------------------
# Henry Adams -- autograd_lab.py (A8 hands-on)
#
# Step 5: If the += in __mul__'s backward is changed to =, the x*x + x
# check fails: x.grad is 3 instead of 7, because the +x path and the first
# x*x path get overwritten. Part 1 check for c.grad == 1.5 still passes
# (c is only used once so there's only one path).
#
# I did backward() with a work list instead of recursion because I was
# worried about hitting the recursion limit on big graphs.
# -----------------------------------------------------------------------
import math


class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return "Value(data=%.4f, grad=%.4f)" % (self.data, self.grad)

    @classmethod
    def of(cls, x):
        return x if isinstance(x, cls) else cls(x)

    def __add__(self, other):
        other = Value.of(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = Value.of(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward
        return out

    def __pow__(self, e):
        assert isinstance(e, (int, float))
        out = Value(self.data ** e, (self,), "pow")

        def _backward():
            self.grad += e * self.data ** (e - 1) * out.grad
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * Value.of(other) ** -1

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return Value.of(other) - self

    def __rtruediv__(self, other):
        return Value.of(other) / self

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = _backward
        return out

    def relu(self):
        out = Value(max(0.0, self.data), (self,), "relu")

        def _backward():
            self.grad += out.grad if self.data > 0 else 0.0
        out._backward = _backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward():
            self.grad += out.data * out.grad
        out._backward = _backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), "log")

        def _backward():
            self.grad += out.grad / self.data
        out._backward = _backward
        return out

    def backward(self):
        # --- topological order, iterative DFS (no recursion) ---
        topo = []
        visited = set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                topo.append(node)
                continue
            if node in visited:
                continue
            visited.add(node)
            stack.append((node, True))
            for p in node._prev:
                if p not in visited:
                    stack.append((p, False))

        # --- count how many consumers each node has ---
        pending = {node: 0 for node in topo}
        for node in topo:
            for p in node._prev:
                pending[p] += 1

        # --- process nodes once all their consumers are done ---
        self.grad = 1.0
        queue = [self]
        while queue:
            node = queue[0]
            node._backward()
            for p in node._prev:
                pending[p] -= 1
                if pending[p] == 0:
                    queue.append(p)


if __name__ == "__main__":
    tol = 1e-9

    # Step 2 -- Part 1 graph
    a = Value(2.0)
    b = Value(3.0)
    c = Value(1.0)
    d = Value(1.5)
    L = (a * b + c) * d.relu()
    print("running backward on Part 1 graph...")
    L.backward()
    print("L =", L)
    assert abs(L.data - 10.5) < tol
    assert abs(a.grad - 4.5) < tol
    assert abs(b.grad - 3.0) < tol
    assert abs(c.grad - 1.5) < tol
    assert abs(d.grad - 7.0) < tol

    # Step 3 -- neuron
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2, bias = Value(0.5), Value(0.3), Value(0.1)
    y_true = Value(1.0)
    pred = (w1 * x1 + w2 * x2 + bias).relu()
    loss = 0.5 * (pred - y_true) ** 2
    loss.backward()
    assert abs(loss.data - 0.02) < tol
    assert abs(w1.grad - 0.2) < tol
    assert abs(w2.grad - 0.4) < tol
    assert abs(bias.grad - 0.2) < tol
    assert abs(x1.grad - 0.1) < tol
    assert abs(x2.grad - 0.06) < tol
    print("neuron grads ok")

    # Step 4 -- reuse
    x = Value(3.0)
    (x * x + x).backward()
    assert abs(x.grad - 7.0) < tol

    a = Value(2.0)
    ((a + a) * a).backward()
    assert abs(a.grad - 8.0) < tol
    print("reuse ok")

    # Step 6 -- finite differences on log(exp(x))
    eps = 1e-6
    x = Value(1.5)
    x.exp().log().backward()
    fd = (Value(1.5 + eps).exp().log().data - Value(1.5 - eps).exp().log().data) / (2 * eps)
    assert abs(x.grad - fd) / max(1e-8, abs(x.grad) + abs(fd)) < 1e-5
    print("finite difference ok")

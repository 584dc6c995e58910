'''
Erin Li
A8 hands-on  -  autograd_lab.py

Step 5 writeup:
  I replaced both `+=` with `=` in the multiply backward.
  - x*x + x at x = 3: assertion FAILED, x.grad was 3.0 instead of 7.0.
    x feeds y through three edges: the "+ x" edge (1) and both slots
    of x*x (3 each). Assignment keeps only whichever write happens last,
    so the "+ x" path and one of the x*x paths are thrown away.
  - Part 1 (a.grad == 4.5) PASSED, a only has one path to L.
  Changed it back to += after.

My backward is a little different from the handout: instead of building a
topological list I just walk the graph outward from the output with a
queue (breadth first), which felt more natural -- the output is handled
first, then its parents, then their parents, etc.
'''

import math
from collections import deque


class Value:

    def __init__(self, data, _children=(), _op=''):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return f'Value(data={self.data}, grad={self.grad}, op={self._op!r})'

    # ---------- basic ops ----------

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def add_backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = add_backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def mul_backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = mul_backward
        return out

    def __pow__(self, n):
        if not isinstance(n, (int, float)):
            raise TypeError('exponent has to be a number')
        out = Value(self.data ** n, (self,), f'**{n}')

        def pow_backward():
            self.grad += n * self.data ** (n - 1) * out.grad
        out._backward = pow_backward
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self * other ** -1

    __radd__ = __add__      # addition and multiplication commute anyway
    __rmul__ = __mul__

    def __rsub__(self, other):
        return Value(other) + (-self)

    def __rtruediv__(self, other):
        return Value(other) * self ** -1

    # ---------- activations ----------

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')

        def tanh_backward():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = tanh_backward
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,), 'relu')

        def relu_backward():
            self.grad += (1.0 if self.data > 0 else 0.0) * out.grad
        out._backward = relu_backward
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), 'exp')

        def exp_backward():
            self.grad += out.data * out.grad
        out._backward = exp_backward
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), 'log')

        def log_backward():
            self.grad += (1 / self.data) * out.grad
        out._backward = log_backward
        return out

    # ---------- backprop ----------

    def backward(self):
        # start at the output with dL/dL = 1
        self.grad = 1.0
        queue = deque([self])
        visited = set()
        while queue:
            node = queue.popleft()
            if node in visited:
                continue
            visited.add(node)
            node._backward()
            # push the parents right-to-left (undo the op in the reverse of
            # the order its inputs were written)
            for parent in reversed(node._prev):
                queue.append(parent)


def check(cond, msg):
    assert cond, msg


def main():
    tol = 1e-9

    print('--- Step 2: Part 1 graph ---')
    a = Value(2.0)
    b = Value(3.0)
    c = Value(1.0)
    d = Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    for name, v in zip('abcd', (a, b, c, d)):
        print(f'  d L / d {name} = {v.grad}')
    assert abs(L.data - 10.5) < tol
    assert abs(a.grad - 4.5) < tol
    assert abs(b.grad - 3.0) < tol
    assert abs(c.grad - 1.5) < tol
    assert abs(d.grad - 7.0) < tol

    print('--- Step 3: A6 neuron ---')
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2, b = Value(0.5), Value(0.3), Value(0.1)
    target = Value(1.0)
    z = w1 * x1 + w2 * x2 + b
    act = z.relu()
    loss = 0.5 * (act - target) ** 2
    loss.backward()
    print(f'  loss = {loss.data:.6f}')
    print(f'  w1 {w1.grad:.4f}  w2 {w2.grad:.4f}  b {b.grad:.4f}  x1 {x1.grad:.4f}  x2 {x2.grad:.4f}')
    assert abs(loss.data - 0.02) < tol
    assert abs(w1.grad - 0.2) < tol
    assert abs(w2.grad - 0.4) < tol
    assert abs(b.grad - 0.2) < tol
    assert abs(x1.grad - 0.1) < tol
    assert abs(x2.grad - 0.06) < tol

    print('--- Step 4: reuse ---')
    x = Value(3.0)
    y = x * x + x
    y.backward()
    print('  x*x + x  ->', x.grad)
    assert abs(x.grad - 7.0) < tol, x.grad

    a = Value(2.0)
    c = (a + a) * a
    c.backward()
    print('  (a+a)*a  ->', a.grad)
    assert abs(a.grad - 8.0) < tol, a.grad

    print('--- Step 6: finite differences ---')
    eps = 1e-6
    f = lambda v: v.exp().log()
    x = Value(1.5)
    f(x).backward()
    num = (f(Value(1.5 + eps)).data - f(Value(1.5 - eps)).data) / (2 * eps)
    rel = abs(x.grad - num) / max(1e-8, abs(x.grad) + abs(num))
    print(f'  analytic {x.grad:.8f} numeric {num:.8f} rel {rel:.1e}')
    check(rel < 1e-5, 'log(exp(x)) gradient does not match finite differences')

    print('\nAll good!')


if __name__ == '__main__':
    main()

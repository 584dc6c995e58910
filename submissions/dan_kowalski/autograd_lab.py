# ============================================================
#  A8 -- autograd lab
#  Dan Kowalski
#
#  Step 5: with `=` instead of `+=` in __mul__'s backward,
#    FAIL -> x*x + x at x=3 gives x.grad = 3.0 (want 7.0). The path
#            through "+ x" (adds 1) and the left x in x*x (adds 3) get
#            overwritten by the last write, so those paths are dropped.
#    TODO: write down the other one
# ============================================================

import math


def as_value(x):
    return x if isinstance(x, Value) else Value(x)


class Value:
    def __init__(self, data, _children=(), _op=''):
        self.data = float(data)
        self.grad = 0.0
        self._prev = set(_children)
        self._op = _op
        self._backward = lambda: None

    def __repr__(self):
        return 'Value(data={}, grad={})'.format(self.data, self.grad)

    def __add__(self, other):
        other = as_value(other)
        out = Value(self.data + other.data, (self, other), '+')

        def back():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = back
        return out

    def __mul__(self, other):
        other = as_value(other)
        out = Value(self.data * other.data, (self, other), '*')

        def back():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = back
        return out

    def __pow__(self, p):
        assert isinstance(p, (int, float))
        out = Value(self.data ** p, (self,), '**%s' % p)

        def back():
            self.grad += p * self.data ** (p - 1) * out.grad
        out._backward = back
        return out

    def __neg__(self):
        return self * -1

    def __sub__(self, other):
        return self + (-other)

    def __truediv__(self, other):
        return self * as_value(other) ** -1

    def tanh(self):
        t = math.tanh(self.data)
        out = Value(t, (self,), 'tanh')

        def back():
            self.grad += (1 - t ** 2) * out.grad
        out._backward = back
        return out

    def relu(self):
        out = Value(max(self.data, 0.0), (self,), 'ReLU')

        def back():
            self.grad += (self.data > 0) * out.grad
        out._backward = back
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,), 'exp')

        def back():
            self.grad += out.data * out.grad
        out._backward = back
        return out

    def log(self):
        out = Value(math.log(self.data), (self,), 'log')

        def back():
            self.grad += out.grad * (1 / self.data)
        out._backward = back
        return out

    def backward(self):
        topo, visited = [], set()

        def build(v):
            if v in visited:
                return
            visited.add(v)
            for child in v._prev:
                build(child)
            topo.append(v)

        build(self)
        self.grad = 1.0
        for v in reversed(topo):
            v._backward()


if __name__ == '__main__':
    eq = lambda p, q: abs(p - q) < 1e-9

    # --- step 2 (part 1 graph)
    a, b, c, d = Value(2.0), Value(3.0), Value(1.0), Value(1.5)
    L = (a * b + c) * d.relu()
    L.backward()
    print('step 2:', L, a.grad, b.grad, c.grad, d.grad)
    assert eq(L.data, 10.5)
    assert eq(a.grad, 4.5) and eq(b.grad, 3.0)
    assert eq(c.grad, 1.5) and eq(d.grad, 7.0)

    # --- step 3 (A6 neuron)
    x1, x2 = Value(1.0), Value(2.0)
    w1, w2, bb = Value(0.5), Value(0.3), Value(0.1)
    tgt = Value(1.0)
    out = (w1 * x1 + w2 * x2 + bb).relu()
    loss = (out - tgt) ** 2 * 0.5
    loss.backward()
    print('step 3: loss', loss.data)
    print('        grads', w1.grad, w2.grad, bb.grad, x1.grad, x2.grad)
    assert eq(loss.data, 0.02)
    assert eq(w1.grad, 0.2)
    assert eq(w2.grad, 0.4)
    assert eq(bb.grad, 0.2)
    assert eq(x1.grad, 0.1)
    assert eq(x2.grad, 0.06)

    # --- step 4 (reuse)
    x = Value(3.0)
    y = x * x + x
    y.backward()
    print('step 4: x*x+x ->', x.grad)
    assert eq(x.grad, 7.0)

    a = Value(2.0)
    c = (a + a) * a
    c.backward()
    print('step 4: (a+a)*a ->', a.grad)
    assert eq(a.grad, 8.0)

    # --- step 6 (finite diff)
    h = 1e-6
    xv = Value(1.5)
    xv.exp().log().backward()
    fd = (Value(1.5 + h).exp().log().data - Value(1.5 - h).exp().log().data) / (2 * h)
    err = abs(xv.grad - fd) / max(1e-8, abs(xv.grad) + abs(fd))
    print('step 6: engine', xv.grad, 'fd', fd, 'rel err', err)
    assert err < 1e-5

    # quick sanity on division/subtraction with numbers on the right
    q = Value(6.0) / 3
    assert eq(q.data, 2.0)
    r = Value(5.0) - 2
    assert eq(r.data, 3.0)

    print('ok - everything passed')

# autograd_lab.py  /  Jo Mensah
#
# Procedural version.  Value is only a record (struct).  The functions below
# fill its fields in: make_node() sets parents/op, and each operation installs
# a backward_fn(node) that pushes node.grad into node's parents.

import math


class Value:
    def __init__(self, data):
        self.data = float(data)
        self.grad = 0.0
        self._prev = ()          # parents
        self._op = ""
        self.aux = None          # extra constant (exponent for pow)
        self.backward_fn = None

    def __repr__(self): return "Value(data=%g, grad=%g)" % (self.data, self.grad)
    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __truediv__(self, o): return div(self, o)
    def __rtruediv__(self, o): return div(o, self)
    def __neg__(self): return neg(self)
    def __pow__(self, k): return power(self, k)
    def relu(self): return relu(self)
    def tanh(self): return tanh(self)
    def exp(self): return exp(self)
    def log(self): return log(self)
    def backward(self): backward(self)

def as_value(x):
    if isinstance(x, Value):
        return x
    return Value(x)

def make_node(data, parents, op, backward_fn, aux=None):
    node = Value(data)
    node._prev = tuple(parents)
    node._op = op
    node.backward_fn = backward_fn
    node.aux = aux
    return node

# ---- backward rules: fn(node) adds d(out)/d(parent) * node.grad ----
def add_backward(node):
    a, b = node._prev
    a.grad += node.grad
    b.grad += node.grad

def mul_backward(node):
    a, b = node._prev
    a.grad += b.data * node.grad
    b.grad += a.data * node.grad

def power_backward(node):
    a = node._prev[0]
    a.grad += node.aux * a.data ** (node.aux - 1) * node.grad

def relu_backward(node):
    a = node._prev[0]
    if a.data > 0:
        a.grad += node.grad

def tanh_backward(node):
    node._prev[0].grad += (1.0 - node.data * node.data) * node.grad

def exp_backward(node):
    node._prev[0].grad += node.data * node.grad

def log_backward(node):
    a = node._prev[0]
    a.grad += node.grad / a.data

# ---- forward operations ----
def add(a, b):
    a = as_value(a); b = as_value(b)
    return make_node(a.data + b.data, (a, b), "+", add_backward)

def mul(a, b):
    a = as_value(a); b = as_value(b)
    return make_node(a.data * b.data, (a, b), "*", mul_backward)

def power(a, k):
    if not isinstance(k, (int, float)):
        raise TypeError("power: exponent must be int or float")
    return make_node(a.data ** k, (a,), "**", power_backward, aux=k)

def neg(a):      return mul(a, -1.0)
def sub(a, b):   return add(a, neg(as_value(b)))
def div(a, b):   return mul(a, power(as_value(b), -1))

def relu(a):
    return make_node(a.data if a.data > 0 else 0.0, (a,), "relu", relu_backward)

def tanh(a):
    return make_node(math.tanh(a.data), (a,), "tanh", tanh_backward)

def exp(a):
    return make_node(math.exp(a.data), (a,), "exp", exp_backward)

def log(a):
    return make_node(math.log(a.data), (a,), "log", log_backward)

def topo_order(root):
    """Iterative DFS post-order: every node appears after all its parents."""
    order = []
    visited = set()
    work = [(root, 0)]                  # (node, 0 = expand me, 1 = emit me)
    while len(work) > 0:
        node, state = work.pop()
        if state == 1:
            order.append(node)
            continue
        if id(node) in visited:
            continue
        visited.add(id(node))
        work.append((node, 1))
        for p in node._prev:
            if id(p) not in visited:
                work.append((p, 0))
    return order

def backward(root):
    order = topo_order(root)
    root.grad = 1.0
    i = len(order) - 1
    while i >= 0:
        node = order[i]
        if node.backward_fn is not None:
            node.backward_fn(node)
        i -= 1

# ---- checks ----
n_fail = 0

def check(cond, msg):
    global n_fail
    print("  %-44s %s" % (msg, "ok" if cond else "FAIL"))
    if not cond:
        n_fail += 1

def near(x, y, eps=1e-6):
    return abs(x - y) < eps

def reuse_x_grad():
    x = Value(3.0)
    backward(add(mul(x, x), x))
    return x.grad

def main():
    global mul_backward
    print("1. lecture graph")
    a = Value(2.0); b = Value(3.0); c = Value(1.0); d = Value(1.5)
    L = mul(add(mul(a, b), c), relu(d))
    backward(L)
    check(near(L.data, 10.5), "L == 10.5")
    check(near(a.grad, 4.5) and near(b.grad, 3.0), "dL/da == 4.5, dL/db == 3.0")
    check(near(c.grad, 1.5) and near(d.grad, 7.0), "dL/dc == 1.5, dL/dd == 7.0")

    print("2. neuron + one gradient descent step")
    w = [Value(0.5), Value(0.3), Value(0.1)]            # w1, w2, b
    def loss(w):
        z = w[0] * 1.0 + w[1] * 2.0 + w[2]
        return 0.5 * (z.relu() - 1) ** 2
    L = loss(w)
    L.backward()
    check(near(L.data, 0.02), "L == 0.02")
    check(near(w[0].grad, 0.2) and near(w[1].grad, 0.4) and near(w[2].grad, 0.2),
          "dL/dw1, dL/dw2, dL/db == 0.2, 0.4, 0.2")
    w2 = [Value(p.data - 0.1 * p.grad) for p in w]
    check(loss(w2).data < L.data, "loss after step < 0.02")

    print("3. reuse")
    check(near(reuse_x_grad(), 7.0), "x=3, y=x*x+x  ->  x.grad == 7")

    print("4. finite differences")
    h = 1e-6
    tests = [("add/mul", lambda x: 2 + x * x * 3, 0.7),
             ("sub/div", lambda x: (2 - x) / (x + 4), 1.1),
             ("rdiv/pow", lambda x: 1 / x + x ** 2.5, 1.3),
             ("tanh", lambda x: tanh(x * 0.5), -0.4),
             ("exp/log", lambda x: log(exp(x) + 1), 0.2),
             ("relu", lambda x: relu(x) * relu(x), 0.6)]
    for name, f, x0 in tests:
        x = Value(x0)
        backward(f(x))
        numeric = (f(Value(x0 + h)).data - f(Value(x0 - h)).data) / (2.0 * h)
        check(near(x.grad, numeric, 1e-5), "d/dx %s at %g" % (name, x0))

    print("5. bug injection: mul_backward uses = instead of +=")
    good_rule = mul_backward
    def broken_mul_backward(node):
        a, b = node._prev
        a.grad = b.data * node.grad
        b.grad = a.data * node.grad
    mul_backward = broken_mul_backward     # mul() looks the name up each call
    broken = reuse_x_grad()
    mul_backward = good_rule
    check(not near(broken, 7.0), "broken rule detected (x.grad = %g)" % broken)
    check(near(reuse_x_grad(), 7.0), "rule restored, x.grad == 7 again")

    print("%d failure(s)" % n_fail)
    return 0 if n_fail == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

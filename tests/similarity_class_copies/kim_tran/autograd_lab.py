# Autograd lab (scalar reverse-mode differentiation)
# Kim Tran
#
# Idea: each op builds a new Value node and attaches a small function that
# sends the node's gradient back to whatever produced it. Calling backward()
# on the final node orders the whole graph and runs those functions in reverse.
import math


class Value:
    def __init__(self, data, _inputs=(), _op='', name=''):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None   # default: nothing to push back
        self._prev = set(_inputs)
        self._op = _op
        self.label = name

    def _debug_dump(self, depth=0):
        # prints the graph under this node, was useful while fixing backward()
        print('  ' * depth + f"{self._op or 'leaf'} data={self.data:.4f} grad={self.grad:.4f}")
        for parent in self._prev:
            parent._debug_dump(depth + 1)

    # ===== reverse pass =====
    def backward(self):
        order, seen = [], set()

        def visit(node):
            # add a node only after all of its inputs have been added
            if node not in seen:
                seen.add(node)
                for parent in node._prev:
                    visit(parent)
                order.append(node)

        visit(self)
        if len(order) == 0:
            return   # can't really happen, self is always in there
        self.grad = 1.0
        for n in reversed(order):
            n._backward()

    # ===== nonlinear functions =====
    def tanh(self):
        th = math.tanh(self.data)
        result = Value(th, (self,), 'tanh')
        def _grad_step():
            self.grad += (1 - th ** 2) * result.grad
        result._backward = _grad_step
        return result

    def relu(self):
        result = Value(self.data if self.data > 0 else 0.0, (self,), 'ReLU')
        def _grad_step():
            self.grad += (1.0 if result.data > 0 else 0.0) * result.grad
        result._backward = _grad_step
        return result

    def log(self):
        result = Value(math.log(self.data), (self,), 'log')
        def _grad_step():
            self.grad += (1.0 / self.data) * result.grad
        result._backward = _grad_step
        return result

    def exp(self):
        result = Value(math.exp(self.data), (self,), 'exp')
        def _grad_step():
            self.grad += result.data * result.grad   # derivative of e^x is itself
        result._backward = _grad_step
        return result

    # ===== arithmetic =====
    def __mul__(self, rhs):
        rhs = rhs if isinstance(rhs, Value) else Value(rhs)
        result = Value(self.data * rhs.data, (self, rhs), '*')
        def _grad_step():
            self.grad += rhs.data * result.grad
            rhs.grad += self.data * result.grad
        result._backward = _grad_step
        return result

    def __add__(self, rhs):
        rhs = rhs if isinstance(rhs, Value) else Value(rhs)
        result = Value(self.data + rhs.data, (self, rhs), '+')
        def _grad_step():
            # addition just passes the gradient through to both sides
            self.grad += result.grad
            rhs.grad += result.grad
        result._backward = _grad_step
        return result

    def __truediv__(self, rhs):
        return self * rhs ** -1

    def __sub__(self, rhs):
        return self + (-rhs)

    def __pow__(self, power):
        assert isinstance(power, (int, float)), "exponent has to be an int or float"
        result = Value(self.data ** power, (self,), f'**{power}')
        def _grad_step():   # d/dx x^n = n x^(n-1)
            self.grad += power * self.data ** (power - 1) * result.grad
        result._backward = _grad_step
        return result

    def __neg__(self):
        return self * -1

    # number on the left side, e.g. 5 * v
    def __rtruediv__(self, lhs):
        return lhs * self ** -1

    def __rmul__(self, lhs):
        return self * lhs

    def __rsub__(self, lhs):
        return lhs + (-self)

    def __radd__(self, lhs):
        return self + lhs


# ============================== tests ==============================

def approx(x, y, tol=1e-6):
    return abs(x - y) < tol


def all_approx(xs, ys, tol=1e-6):
    # compare two lists element by element (ended up not needing it)
    return len(xs) == len(ys) and all(approx(x, y, tol) for x, y in zip(xs, ys))


def central_diff(fn, x, h=1e-5):
    return (fn(Value(x + h)).data - fn(Value(x - h)).data) / (2 * h)


def verify_reused_variable():
    v = Value(3.0)
    out = v * v + v
    out.backward()
    assert approx(v.grad, 7.0), f"x.grad should be 7 but it is {v.grad}"
    print("reused variable passed:  x.grad =", v.grad)


def verify_bug_is_caught():
    # temporarily break __mul__ so it assigns grads instead of adding them;
    # the reused-variable test has to notice that
    original_mul = Value.__mul__
    def broken_mul(self, rhs):
        rhs = rhs if isinstance(rhs, Value) else Value(rhs)
        result = Value(self.data * rhs.data, (self, rhs), '*')
        def _grad_step():
            self.grad = rhs.data * result.grad     # wrong on purpose (should be +=)
            rhs.grad = self.data * result.grad     # wrong on purpose (should be +=)
        result._backward = _grad_step
        return result
    Value.__mul__ = broken_mul
    detected = False
    try:
        verify_reused_variable()
    except AssertionError as e:
        detected = True
        print("bug check:               reused-variable test failed like expected ->", e)
    finally:
        Value.__mul__ = original_mul
    assert detected, "broken __mul__ went unnoticed!"
    verify_reused_variable()   # should be fine again with the real __mul__


def single_neuron_loss(wa, wb, bias, xa=1.0, xb=2.0):
    pre = wa * xa + wb * xb + bias
    return 0.5 * (pre.relu() - 1) ** 2


def verify_numeric_gradients():
    cases = [
        ("x^3",      lambda t: t * t * t,                      1.3),
        ("x^2.5",    lambda t: t ** 2.5,                       0.8),
        ("tanh",     lambda t: t.tanh(),                       0.4),
        ("exp",      lambda t: t.exp(),                       -0.7),
        ("log",      lambda t: (t + 2).log(),                  0.5),
        ("relu",     lambda t: (3 * t).relu(),                 0.9),
        ("2/x",      lambda t: 2 / t,                          1.7),
        ("2-x",      lambda t: 2 - t,                          0.3),
        ("x/(1+x)",  lambda t: t / (1 + t),                    2.0),
        ("mixed",    lambda t: (t * t).exp() - t.tanh() / 4,   0.6),
    ]
    for label, fn, start in cases:
        v = Value(start)
        fn(v).backward()
        approx_grad = central_diff(fn, start)
        assert abs(v.grad - approx_grad) < 1e-4, f"{label}: autograd {v.grad} vs numerical {approx_grad}"
    print(f"numeric gradients passed: all {len(cases)} functions match finite differences")


def verify_small_graph():
    a, b = Value(2.0, name='a'), Value(3.0, name='b')
    c, d = Value(1.0, name='c'), Value(1.5, name='d')
    prod = a * b
    total = prod + c
    act = d.relu()
    loss = total * act
    loss.backward()
    assert approx(loss.data, 10.5), loss.data
    for node, want in [(a, 4.5), (b, 3.0), (c, 1.5), (d, 7.0)]:
        assert approx(node.grad, want), node
    print("small graph passed:      L =", loss.data)


def verify_single_neuron():
    wa, wb, bias = Value(0.5), Value(0.3), Value(0.1)
    loss = single_neuron_loss(wa, wb, bias)
    loss.backward()
    assert approx(loss.data, 0.02), loss.data
    assert approx(wa.grad, 0.2) and approx(wb.grad, 0.4) and approx(bias.grad, 0.2)
    # take one gradient descent step, loss has to go down
    step = 0.1
    new_loss = single_neuron_loss(*[Value(w.data - step * w.grad) for w in (wa, wb, bias)])
    assert new_loss.data < loss.data, (new_loss.data, loss.data)
    print(f"single neuron passed:    loss went {loss.data:.4f} -> {new_loss.data:.4f} in one step")


if __name__ == "__main__":
    verify_small_graph()
    verify_single_neuron()
    verify_reused_variable()
    verify_numeric_gradients()
    verify_bug_is_caught()
    print("\neverything passed!")

# ---------------------------------------------------------------------------
# Course-provided helpers for the autograd lab. Paste these below your Value
# class; do not change them (the course staff rely on their output format).
# ---------------------------------------------------------------------------
import math


def trace(root):
    """Collect every node and edge reachable from root (for drawing the graph)."""
    nodes, edges = set(), set()

    def build(v):
        if v not in nodes:
            nodes.add(v)
            for child in v._prev:
                edges.add((child, v))
                build(child)

    build(root)
    return nodes, edges


def describe_graph(root):
    """Print the graph as text: one line per node, then one line per edge."""
    nodes, edges = trace(root)
    names = {}
    for index, node in enumerate(sorted(nodes, key=lambda n: (n._op, n.data))):
        names[id(node)] = f"n{index}"
        print(f"{names[id(node)]:>4} | op {node._op or 'leaf':<5} | data {node.data:10.4f} | grad {node.grad:10.4f}")
    for child, parent in sorted(edges, key=lambda e: (names[id(e[0])], names[id(e[1])])):
        print(f"{names[id(child)]:>4} -> {names[id(parent)]}")


def numerical_derivative(f, x, h=1e-6):
    """Centered finite difference (f(x + h) - f(x - h)) / 2h."""
    return (f(x + h) - f(x - h)) / (2.0 * h)


def relative_error(a, b, floor=1e-12):
    return abs(a - b) / max(floor, abs(a) + abs(b))


def assert_close(label, got, want, tol=1e-6):
    if not math.isfinite(got) or abs(got - want) > tol * max(1.0, abs(want)):
        raise AssertionError(f"{label}: got {got!r}, expected {want!r} (tolerance {tol})")
    print(f"  ok  {label}: {got:.6f}")


def run_checks(checks):
    """Run every check function; report how many passed and stop with status 1 if any failed."""
    failed = 0
    for check in checks:
        try:
            check()
        except AssertionError as error:
            failed += 1
            print(f"FAIL {check.__name__}: {error}")
        else:
            print(f"PASS {check.__name__}")
    print(f"{len(checks) - failed}/{len(checks)} checks passed")
    if failed:
        raise SystemExit(1)


def gradient_check(build, point, h=1e-6, tol=1e-5):
    """Compare backward() with centered differences at ``point``, one input at a time.

    ``build`` takes a list of Values and returns the output Value; ``point`` is a list of floats.
    Returns the worst relative error seen.
    """
    inputs = [Value(x) for x in point]  # noqa: F821 - Value is the student's class
    out = build(inputs)
    out.backward()
    worst = 0.0
    for i, x in enumerate(point):

        def f(t, i=i):
            shifted = list(point)
            shifted[i] = t
            return build([Value(v) for v in shifted]).data  # noqa: F821

        numeric = numerical_derivative(f, x, h)
        err = relative_error(inputs[i].grad, numeric)
        worst = max(worst, err)
        if err > tol:
            raise AssertionError(f"input {i}: backward {inputs[i].grad!r} vs numeric {numeric!r}")
    return worst


TOY_DATA = [
    ([2.0, 3.0, -1.0], 1.0),
    ([3.0, -1.0, 0.5], -1.0),
    ([0.5, 1.0, 1.0], -1.0),
    ([1.0, 1.0, -1.0], 1.0),
]


def train_neuron(weights, bias, data=TOY_DATA, steps=20, lr=0.05):
    """Plain gradient descent on a single tanh neuron; returns the loss after each step."""
    history = []
    for _ in range(steps):
        loss = Value(0.0)  # noqa: F821
        for xs, target in data:
            act = bias
            for w, x in zip(weights, xs):
                act = act + w * x
            diff = act.tanh() - target
            loss = loss + diff * diff
        for p in [*weights, bias]:
            p.grad = 0.0
        loss.backward()
        for p in [*weights, bias]:
            p.data -= lr * p.grad
        history.append(loss.data)
    return history

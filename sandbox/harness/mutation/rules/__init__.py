"""Where an operation's backward rule lives, followed from the operation's method.

An operation's rule is the code that runs, in the backward pass, for the nodes the operation
makes. It is found by following the method: the closures and lambdas it defines; the helper
methods and module-level functions it calls, names (in a lambda, ``functools.partial``, a
function object handed on) or delegates to; the entry of a dispatch table keyed by the
operation's tag (its ``_op``). Code that belongs to this operation alone is *private*: every
reference to it, in the engine's code, lies in the method, in other private code, in a table
entry keyed by the operation's tag, or in a single-operation function the method delegates to
with its operands (``def __mul__(self, o): return mul(self, o)``). A bug goes straight into
private code.

Code several operations share (a ``_binary`` helper, a generic ``_chain(x, out, local)``, an
``_acc(node, g)`` accumulator) is edited only for this operation. Its *partials* (the local
derivatives it passes in: lambdas, expressions, entries of a table keyed by its tag) are its
own, and edited where they are written. A bug in the shared accumulation itself is *guarded*:
the edit applies only when the node's tag is the operation's (``out._op == '*'``), so every
other operation keeps its rule; when another operation's nodes could carry the same tag, no
guard is built and the bug does not apply. Where the backward pass itself applies every
node's local derivatives (``parent.grad += local * node.grad``), the partials are what the
operation stored in its node for that pass to read: ``(operand, derivative)`` pairs, a lambda
returning them, a pullback of the upstream gradient, or a method of the node's own subclass.
All of this is found by a small abstract interpretation of the method and the helpers it
calls (``Trace``): which names hold the operands, the output node, the operation's own lambdas
and expressions, where the ``+=`` are and what feeds them.

Standard library only: this runs inside the sandbox.
"""

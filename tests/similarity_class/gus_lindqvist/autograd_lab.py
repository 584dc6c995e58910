# Autograd lab - Gus Lindqvist
# A tiny automatic differentiation engine for scalars. Every number is wrapped
# in a Value object that remembers where it came from, so later we can go
# backwards through the graph and compute gradients with the chain rule.
import math

# This flag is only used in the "bug injection" check at the bottom. When it is
# True, multiplication writes its gradient with = instead of += (on purpose)
BREAK_MULTIPLICATION_GRADIENT_ACCUMULATION = False


class Value:
    def __init__(self, data, children_values=(), operation_name=""):
        self.data = float(data)  # the actual number stored in this node
        self.grad = 0.0  # gradient of the final output with respect to this node
        self._prev = set(children_values)  # the Values that were used to make this one
        self._op = operation_name  # which operation made this Value, for example "+"
        self._backward = lambda: None  # leaf nodes have nothing to pass backwards
    def __add__(self, other):
        # if other is a plain number we wrap it so it also has .data and .grad
        if isinstance(other, Value):
            other_value = other
        else:
            other_value = Value(other)
        result_value = Value(self.data + other_value.data, (self, other_value), "+")
        def backward_for_addition():
            # d(a+b)/da = 1 and d(a+b)/db = 1, so both just get the result gradient
            self.grad += 1.0 * result_value.grad
            other_value.grad += 1.0 * result_value.grad
        result_value._backward = backward_for_addition
        return result_value
    def __mul__(self, other):
        if isinstance(other, Value):
            other_value = other
        else:
            other_value = Value(other)
        result_value = Value(self.data * other_value.data, (self, other_value), "*")
        def backward_for_multiplication():
            # d(a*b)/da = b and d(a*b)/db = a
            if BREAK_MULTIPLICATION_GRADIENT_ACCUMULATION:
                self.grad = other_value.data * result_value.grad  # wrong on purpose!
                other_value.grad = self.data * result_value.grad  # wrong on purpose!
            else:
                self.grad += other_value.data * result_value.grad
                other_value.grad += self.data * result_value.grad
        result_value._backward = backward_for_multiplication
        return result_value
    def __pow__(self, exponent):
        # only plain numbers are allowed as the exponent
        if isinstance(exponent, Value):
            raise TypeError("the exponent has to be an int or a float, not a Value")
        exponent_number = float(exponent)
        result_value = Value(self.data ** exponent_number, (self,), "**")
        def backward_for_power():
            # power rule: d(x**n)/dx = n * x**(n-1)
            self.grad += exponent_number * (self.data ** (exponent_number - 1)) * result_value.grad
        result_value._backward = backward_for_power
        return result_value
    def __neg__(self):  # the negative of a value is the same as multiplying by -1
        return self * -1
    def __sub__(self, other):
        if isinstance(other, Value):
            return self + (-other)  # here -other calls __neg__ on the Value
        return self + (-other)  # for a plain number -other is just a number
    def __truediv__(self, other):
        if isinstance(other, Value):
            return self * (other ** -1)
        return self * (1.0 / other)  # for a plain number we can divide right away
    def __radd__(self, other):  # this makes "2 + value" work
        return self + other
    def __rmul__(self, other):  # this makes "3 * value" work
        return self * other
    def __rsub__(self, other):  # this makes "2 - value" work, it means other - self
        return (-self) + other
    def __rtruediv__(self, other):  # this makes "2 / value" work, it means other / self
        return (self ** -1) * other
    def relu(self):
        if self.data > 0:
            output_number = self.data
        else:
            output_number = 0.0
        result_value = Value(output_number, (self,), "relu")
        def backward_for_relu():
            # the slope of relu is 1 for positive inputs and 0 otherwise
            if result_value.data > 0:
                self.grad += 1.0 * result_value.grad
        result_value._backward = backward_for_relu
        return result_value
    def tanh(self):
        tanh_of_input = math.tanh(self.data)
        result_value = Value(tanh_of_input, (self,), "tanh")
        def backward_for_tanh():
            # the derivative of tanh(x) is 1 - tanh(x)**2
            self.grad += (1.0 - tanh_of_input * tanh_of_input) * result_value.grad
        result_value._backward = backward_for_tanh
        return result_value
    def exp(self):
        exp_of_input = math.exp(self.data)
        result_value = Value(exp_of_input, (self,), "exp")
        def backward_for_exp():
            # the derivative of e**x is e**x itself
            self.grad += exp_of_input * result_value.grad
        result_value._backward = backward_for_exp
        return result_value
    def log(self):
        result_value = Value(math.log(self.data), (self,), "log")
        def backward_for_log():
            # the derivative of ln(x) is 1/x
            self.grad += (1.0 / self.data) * result_value.grad
        result_value._backward = backward_for_log
        return result_value
    def _add_node_and_its_children_to_order(self, node, ordered_list_of_nodes, nodes_already_visited):
        if node in nodes_already_visited:  # we only want to visit every node one time
            return
        nodes_already_visited.add(node)
        for child_node in node._prev:  # first add all the inputs of this node
            self._add_node_and_its_children_to_order(child_node, ordered_list_of_nodes, nodes_already_visited)
        ordered_list_of_nodes.append(node)  # then the node itself, so inputs come before outputs
    def build_order(self):
        ordered_list_of_nodes = []
        nodes_already_visited = set()
        self._add_node_and_its_children_to_order(self, ordered_list_of_nodes, nodes_already_visited)
        return ordered_list_of_nodes
    def backward(self):
        ordered_list_of_nodes = self.build_order()
        self.grad = 1.0  # the gradient of the output with respect to itself is 1
        for node in reversed(ordered_list_of_nodes):  # go from the output back to the inputs
            node._backward()


def numbers_are_close(first_number, second_number, tolerance=1e-6):
    return abs(first_number - second_number) < tolerance

def check_value_used_twice():
    x = Value(3.0)
    y = x * x + x
    y.backward()
    print("  y =", y.data, "x.grad =", x.grad)
    return numbers_are_close(x.grad, 7.0)

def run_all_checks():
    number_of_failed_checks = 0
    print("Check 1: the small example graph from the lecture")
    a = Value(2.0)
    b = Value(3.0)
    c = Value(1.0)
    d = Value(1.5)
    n1 = a * b
    n2 = n1 + c
    n3 = d.relu()
    L = n2 * n3
    L.backward()
    print("  L =", L.data, "grads:", a.grad, b.grad, c.grad, d.grad)
    for got, expected in [(L.data, 10.5), (a.grad, 4.5), (b.grad, 3.0), (c.grad, 1.5), (d.grad, 7.0)]:
        if not numbers_are_close(got, expected):
            print("  FAILED: got", got, "but expected", expected)
            number_of_failed_checks += 1
    print("Check 2: a single neuron with a squared loss")
    x1 = 1.0  # the inputs are plain numbers, only the weights are Values
    x2 = 2.0
    w1 = Value(0.5)
    w2 = Value(0.3)
    bias = Value(0.1)
    z = w1 * x1 + w2 * x2 + bias
    loss = 0.5 * (z.relu() - 1) ** 2
    loss.backward()
    print("  loss =", loss.data, "dw1 =", w1.grad, "dw2 =", w2.grad, "db =", bias.grad)
    for got, expected in [(loss.data, 0.02), (w1.grad, 0.2), (w2.grad, 0.4), (bias.grad, 0.2)]:
        if not numbers_are_close(got, expected):
            print("  FAILED: got", got, "but expected", expected)
            number_of_failed_checks += 1
    learning_rate = 0.1
    new_w1 = Value(w1.data - learning_rate * w1.grad)  # w_new = w_old - learning_rate * gradient
    new_w2 = Value(w2.data - learning_rate * w2.grad)
    new_bias = Value(bias.data - learning_rate * bias.grad)
    new_loss = 0.5 * ((new_w1 * x1 + new_w2 * x2 + new_bias).relu() - 1) ** 2
    print("  loss after one gradient descent step =", new_loss.data)
    if not new_loss.data < loss.data:
        print("  FAILED: the loss did not go down")
        number_of_failed_checks += 1
    print("Check 3: using the same value twice (y = x*x + x)")
    if not check_value_used_twice():
        print("  FAILED: x.grad should be 7")
        number_of_failed_checks += 1
    print("Check 4: compare backward with finite differences")
    small_step = 1e-6
    list_of_test_functions = [("x*x - 3/x", lambda x: x * x - 3 / x, 1.5),
                              ("(2-x)/4", lambda x: (2 - x) / 4, 0.3),
                              ("tanh(x)", lambda x: x.tanh(), 0.5),
                              ("exp(2x)", lambda x: (2 * x).exp(), 0.2),
                              ("relu(x)**3 + log(x) * x", lambda x: x.relu() ** 3 + x.log() * x, 0.8)]
    for function_name, test_function, starting_point in list_of_test_functions:
        input_value = Value(starting_point)
        test_function(input_value).backward()
        value_above = test_function(Value(starting_point + small_step)).data
        value_below = test_function(Value(starting_point - small_step)).data
        numerical_gradient = (value_above - value_below) / (2 * small_step)
        print("  ", function_name, "backward:", input_value.grad, "numerical:", numerical_gradient)
        if not numbers_are_close(input_value.grad, numerical_gradient, 1e-4):
            print("  FAILED for", function_name)
            number_of_failed_checks += 1
    print("Check 5: bug injection (multiplication uses = instead of +=)")
    global BREAK_MULTIPLICATION_GRADIENT_ACCUMULATION
    BREAK_MULTIPLICATION_GRADIENT_ACCUMULATION = True
    bug_was_caught = not check_value_used_twice()
    BREAK_MULTIPLICATION_GRADIENT_ACCUMULATION = False  # put it back to normal
    print("  the reuse check noticed the bug:", bug_was_caught)
    if not bug_was_caught or not check_value_used_twice():
        print("  FAILED: the bug was not caught or the fix was not put back")
        number_of_failed_checks += 1
    print("Number of failed checks:", number_of_failed_checks)
    return number_of_failed_checks == 0

if __name__ == "__main__":
    if run_all_checks() == True:
        print("ALL CHECKS PASSED")
    else:
        print("SOME CHECKS FAILED")
        exit(1)

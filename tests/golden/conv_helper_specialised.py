def golden_conv_vjp_backward(saved, dout):
    stack, t1, t13 = saved
    stack_ = list(stack)
    dkernel = np.zeros((2, 3, 2))
    for i in reversed(range(1, 2)):
        # grad of: out = out + x[:, i : x.shape[1] - kernel.shape[0] + 1 + i] @ kernel[i]
        dkernel[i] += np.tensordot(t13, dout, axes=((0, 1), (0, 1)))
        t13 = stack_.pop()
    # grad of: out = x[:, :-1] @ kernel[0]
    dkernel[0] += np.tensordot(t1, dout, axes=((0, 1), (0, 1)))
    return dkernel


def golden_conv_vjp(x, kernel):
    stack = []
    t13 = None
    t1 = x[:, :-1]
    out = t1 @ kernel[0]
    for i in range(1, 2):
        stack.append(t13)
        t13 = x[:, i:4 + i]
        out = out + t13 @ kernel[i]
    return (out, (stack, t1, t13))


def dgolden_conv_loss(kernel, x):
    t1, t1_saved = golden_conv_vjp(x, kernel)
    t2 = np.tanh(t1)
    # grad of: return np.sum(np.tanh(golden_conv(x, kernel)) ** 2)
    dkernel = golden_conv_vjp.backward(t1_saved, 2.0 * t2 * (1.0 - t2 ** 2))
    return dkernel

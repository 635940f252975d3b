def dlogistic(w, x, y):
    t2 = np.exp(-(x @ w))
    t3 = 1.0 + t2
    p = 1.0 / t3
    # grad of: return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    dt10 = np.broadcast_to(-0.2, (5,))
    dp = -(dt10 * (1.0 - y) / (1.0 - p)) + dt10 * y / p
    # grad of: z = x @ w
    dw = matmul_cotangent_b(-(-dp * p / t3 * t2), x, w)
    return as_gradient(dw, w)

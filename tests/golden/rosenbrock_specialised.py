def drosenbrock(x):
    t2 = x[:-1]
    # grad of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    dt10 = np.broadcast_to(1.0, (9,))
    dt4 = dt10 * 100.0 * 2 * (x[1:] - t2 ** 2)
    dx = index_cotangent(-(dt10 * 2 * (1.0 - x[:-1])), x, np.s_[:-1]) + index_cotangent(-dt4 * 2 * t2, x, np.s_[:-1]) + index_cotangent(dt4, x, np.s_[1:])
    return as_gradient(dx, x)

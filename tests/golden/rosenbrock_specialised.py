def drosenbrock(x):
    t2 = x[:-1]
    # grad of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    dx = np.empty_like(x)
    dx[-1:] = 0.0
    dt4 = 200.0 * (x[1:] - t2 ** 2)
    dx[:-1] = -2.0 * (1.0 - x[:-1]) + dt4 * -2 * t2
    dx[1:] += dt4
    return dx

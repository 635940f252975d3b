def dlogistic(w, x, y):
    t2 = np.exp(-(x @ w))
    t3 = 1.0 + t2
    p = 1.0 / t3
    # grad of: return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    dp = 0.2 * (1.0 - y) / (1.0 - p) - 0.2 * y / p
    # grad of: p = 1.0 / (1.0 + np.exp(-z))
    dz = dp * p / t3 * t2
    # grad of: z = x @ w
    dw = dz @ x
    return as_gradient(dw, w)

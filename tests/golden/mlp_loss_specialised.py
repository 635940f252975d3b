def dmlp_loss(x, W1, b1, W2, b2, y):
    h = np.maximum(x @ W1 + b1, 0.0)
    # grad of: return np.mean((h @ W2 + b2 - y) ** 2)
    dt5 = 0.125 * (h @ W2 + b2 - y)
    db2 = dt5.sum(axis=0)
    dW2 = h.T @ dt5
    # grad of: h = np.maximum(x @ W1 + b1, 0.0)
    dt2 = dt5 @ W2.T * (h > 0.0)
    db1 = dt2.sum(axis=0)
    dW1 = x.T @ dt2
    return (dW1, db1, dW2, db2)

def dmlp_loss(x, W1, b1, W2, b2, y):
    t1 = x @ W1
    t2 = t1 + b1
    h = np.maximum(t2, 0.0)
    t3 = h @ W2
    t4 = t3 + b2
    t5 = t4 - y
    t6 = t5 ** 2
    t7 = np.mean(t6)
    dt7 = seed_cotangent(t7)
    # grad of: return np.mean((h @ W2 + b2 - y) ** 2)
    dt5 = unbroadcast(np.broadcast_to(dt7 / np.size(t6), np.shape(t6)) * 2 * t5, t5)
    dt4 = unbroadcast(dt5, t4)
    dt3 = unbroadcast(dt4, t3)
    db2 = unbroadcast(dt4, b2)
    dW2 = matmul_cotangent_b(dt3, h, W2)
    # grad of: h = np.maximum(x @ W1 + b1, 0.0)
    dt2 = unbroadcast(matmul_cotangent_a(dt3, h, W2) * (h > 0.0), t2)
    db1 = unbroadcast(dt2, b1)
    dW1 = matmul_cotangent_b(unbroadcast(dt2, t1), x, W1)
    return (as_gradient(dW1, W1), as_gradient(db1, b1), as_gradient(dW2, W2), as_gradient(db2, b2))

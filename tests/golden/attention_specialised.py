def dgolden_attention(Wq, Wk, Wv, X):
    t1 = X @ Wq
    t3 = X @ Wv
    t4 = (X @ Wk).T
    scores = t1 @ t4 * 0.25
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    t12 = e / e.sum(axis=1, keepdims=True)
    # grad of: return np.sum((e / np.sum(e, axis=1, keepdims=True) @ v) ** 2)
    dt13 = 2.0 * (t12 @ t3)
    dt12 = dt13 @ t3.T
    dv = t12.T @ dt13
    # grad of: scores = (q @ k.T) / np.sqrt(X.shape[1])
    dt5 = (dt12 - (dt12 * t12).sum(axis=1, keepdims=True)) * t12 * 0.25
    dq = dt5 @ t4.T
    dk = (t1.T @ dt5).T
    # grad of: q, k, v = X @ Wq, X @ Wk, X @ Wv
    dWv = X.T @ dv
    dWk = X.T @ dk
    dWq = X.T @ dq
    return (dWq, dWk, dWv)

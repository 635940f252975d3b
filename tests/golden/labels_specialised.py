def dgolden_labels(W, X, y):
    logits = X @ W
    t2 = np.exp(logits - logits.max(axis=1, keepdims=True))
    # grad of: return -np.mean(logp[np.arange(X.shape[0]), y])
    dlogp = np.zeros((6, 3))
    dlogp[np.arange(X.shape[0]), y] = -0.16666666666666666
    # grad of: logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dshifted = dlogp - dlogp.sum(axis=1, keepdims=True) / t2.sum(axis=1, keepdims=True) * t2
    # grad of: logits = X @ W
    dW = X.T @ dshifted
    return dW

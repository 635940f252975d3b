def dgolden_labels(W, X, y):
    logits = X @ W
    shifted = logits - logits.max(axis=1, keepdims=True)
    t2 = np.exp(shifted)
    t3 = t2.sum(axis=1, keepdims=True)
    # grad of: return -np.mean(logp[np.arange(X.shape[0]), y])
    dlogp = index_cotangent(np.broadcast_to(-0.16666666666666666, (6,)), shifted - np.log(t3), (np.arange(X.shape[0]), y))
    # grad of: logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dshifted = dlogp - dlogp.sum(axis=1, keepdims=True) / t3 * t2
    # grad of: logits = X @ W
    dW = X.T @ dshifted
    return dW

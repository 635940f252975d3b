def dgolden_labels(W, X, y):
    logits = X @ W
    t1 = np.max(logits, axis=1, keepdims=True)
    shifted = logits - t1
    t2 = np.exp(shifted)
    t3 = np.sum(t2, axis=1, keepdims=True)
    # grad of: return -np.mean(logp[np.arange(X.shape[0]), y])
    dlogp = index_cotangent(np.broadcast_to(-0.16666666666666666, (6,)), shifted - np.log(t3), (np.arange(X.shape[0]), y))
    # grad of: logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dshifted = dlogp - dlogp.sum(axis=1, keepdims=True) / t3 * t2
    # grad of: shifted = logits - np.max(logits, axis=1, keepdims=True)
    hits = np.equal(logits, t1)
    dlogits = dshifted + hits * tie_share(-dshifted.sum(axis=1, keepdims=True), hits, 1, t1.dtype)
    # grad of: logits = X @ W
    dW = X.T @ dlogits
    return dW

def dsoftmax_cross_entropy(logits, labels):
    t2 = np.exp(logits - logits.max(axis=1, keepdims=True))
    # grad of: return -np.mean(np.sum(labels * log_probs, axis=1))
    dlog_probs = -0.25 * labels
    # grad of: log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dshifted = dlog_probs - dlog_probs.sum(axis=1, keepdims=True) / t2.sum(axis=1, keepdims=True) * t2
    return dshifted

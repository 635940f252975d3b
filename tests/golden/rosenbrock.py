def drosenbrock(x):
    t1 = x[1:]
    t2 = x[:-1]
    t3 = t2 ** 2
    t4 = t1 - t3
    t6 = 100.0 * t4 ** 2
    t8 = 1.0 - x[:-1]
    t9 = t8 ** 2
    t10 = t6 + t9
    t11 = np.sum(t10)
    dt11 = seed_cotangent(t11)
    # grad of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    dt10 = np.broadcast_to(dt11, np.shape(t10))
    dt7 = -unbroadcast(unbroadcast(dt10, t9) * 2 * t8, t8)
    dt4 = unbroadcast(unbroadcast(dt10, t6) * 100.0 * 2 * t4, t4)
    dt2 = unbroadcast(unbroadcast(-dt4, t3) * 2 * t2, t2)
    dx = index_cotangent(dt7, x, np.s_[:-1]) + index_cotangent(dt2, x, np.s_[:-1])
    dx[1:] += unbroadcast(dt4, t1)
    return as_gradient(dx, x)

def dscalar(x, y):
    t1 = np.sin(x)
    z = t1 * y
    t2 = x ** 2
    z_1 = z + t2
    dz_1 = seed_cotangent(z_1)
    # grad of: z = z + x**2
    dz = unbroadcast(dz_1, z)
    # grad of: z = np.sin(x) * y
    dy = unbroadcast(dz * t1, y)
    dx = unbroadcast(unbroadcast(dz_1, t2) * 2 * x, x) + unbroadcast(dz * y, t1) * np.cos(x)
    return (as_gradient(dx, x), as_gradient(dy, y))

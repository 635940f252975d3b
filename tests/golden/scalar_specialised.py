def dscalar(x, y):
    try:
        t1 = math.sin(x)
        # grad of: z = np.sin(x) * y
        dy = 1.0 * t1
        dx = 2.0 * x + 1.0 * y * math.cos(x)
        return (float(dx), float(dy))
    except (ArithmeticError, ValueError):
        # math raised where NumPy gives inf or nan
        return dscalar_generic(x, y)

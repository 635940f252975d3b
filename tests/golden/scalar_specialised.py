def dscalar(x, y):
    try:
        # grad of: z = np.sin(x) * y
        dy = 1.0 * math.sin(x)
        dx = 2.0 * x + 1.0 * y * math.cos(x)
        return (float(dx), float(dy))
    except (ArithmeticError, ValueError):
        # math raised where NumPy gives inf or nan
        return dscalar_generic(x, y)

"""Programs written the way users write them, round 35: scientific simulations. ODE
integrators with a parameter (RK4, leapfrog, symplectic Euler, a damped pendulum), finite
differences with in-place stencil updates, particles (n-body, Lennard-Jones), a Kalman
filter's log-likelihood, 1-D finite elements assembled with ``K[i:i + 2, i:i + 2] += ke``,
fitted population and chemical models, optics and lattice energies. Each is checked in
every mode as round 32 does (``test_real_programs_round32.py``): the gradient on a first and
a later call, forward mode and the Hessian-vector product against central differences.
"""

import numpy as np
import pytest
from test_real_programs_round32 import MODES, S2S_HVP, _check_program

R = np.random.default_rng(3535_1)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


# --- ODE integrators --------------------------------------------------------------------------


def _rk4_step(f, y, t, h, theta):
    k1 = f(y, t, theta)
    k2 = f(y + 0.5 * h * k1, t + 0.5 * h, theta)
    k3 = f(y + 0.5 * h * k2, t + 0.5 * h, theta)
    k4 = f(y + h * k3, t + h, theta)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def _van_der_pol(y, t, theta):
    x, v = y[0], y[1]
    return np.array([v, theta[0] * (1 - x**2) * v - theta[1] * x])


def rk4_van_der_pol(theta):
    """RK4 with the right-hand side passed as a function, the end state matched."""
    y = np.array([1.0, 0.0])
    t, h = 0.0, 0.1
    for _ in range(8):
        y = _rk4_step(_van_der_pol, y, t, h, theta)
        t += h
    return np.sum((y - np.array([0.5, -0.8])) ** 2)


def leapfrog_kepler(q0):
    """Kick-drift-kick leapfrog of a planet in a softened 1/r potential: energy drift."""
    q = q0.copy()
    p = np.array([0.0, 1.0])

    def force(q):
        r2 = q @ q + 0.1
        return -q / r2**1.5

    def energy(q, p):
        return 0.5 * p @ p - 1.0 / np.sqrt(q @ q + 0.1)

    e0 = energy(q, p)
    dt = 0.05
    for _ in range(6):
        p = p + 0.5 * dt * force(q)
        q = q + dt * p
        p = p + 0.5 * dt * force(q)
    return (energy(q, p) - e0) ** 2 * 1e3 + np.sum(q**2)


def symplectic_euler_chain(k):
    """A chain of masses on springs of stiffness k, symplectic Euler, positions recorded
    in a preallocated trajectory buffer."""
    n = len(k) + 1
    x = np.linspace(0.0, 1.0, n) + 0.05 * np.sin(np.arange(n))
    v = np.zeros(n)
    traj = np.zeros((5, n))
    for step in range(5):
        stretch = np.diff(x) - 1.0 / (n - 1)
        f = np.zeros(n)
        f[:-1] += k * stretch
        f[1:] -= k * stretch
        v = v + 0.1 * f
        x = x + 0.1 * v
        traj[step] = x
    return np.sum(traj[:, -1] ** 2) + np.sum(v**2)


def damped_pendulum(params):
    """theta'' = -g/L sin(theta) - c theta', integrated by semi-implicit Euler until
    the swing decays below a threshold or a step budget runs out."""
    g_over_l, c = params[0], params[1]
    theta, omega = 0.8, 0.0
    dt, steps = 0.05, 0
    energy = 1.0
    while energy > 0.05 and steps < 30:
        omega = omega - dt * (g_over_l * np.sin(theta) + c * omega)
        theta = theta + dt * omega
        energy = 0.5 * omega**2 + g_over_l * (1 - np.cos(theta))
        steps += 1
    return theta**2 + omega**2 + 0.01 * steps


def adaptive_euler_decay(k):
    """An explicit Euler whose step halves when the change is large (step size decided on
    values, a branch at each point)."""
    y, t, h = np.array([1.0, 0.5]), 0.0, 0.2
    total = 0.0
    while t < 1.0:
        dy = -k * y + 0.1 * y[::-1]
        if np.max(np.abs(h * dy)) > 0.15:
            h = h / 2
            continue
        y = y + h * dy
        t += h
        total = total + h * np.sum(y**2)
    return total


def rk45_like_pair(theta):
    """A Heun/Euler embedded pair: the error estimate penalised, the solution returned."""
    y = np.array([1.0, 0.0])
    err = 0.0
    for _ in range(6):
        k1 = np.array([y[1], -theta[0] * y[0] - theta[1] * y[1]])
        y_euler = y + 0.1 * k1
        k2 = np.array([y_euler[1], -theta[0] * y_euler[0] - theta[1] * y_euler[1]])
        y_heun = y + 0.05 * (k1 + k2)
        err = err + np.sum((y_heun - y_euler) ** 2)
        y = y_heun
    return np.sum(y**2) + 10 * err


# --- partial differential equations -----------------------------------------------------


def heat_explicit_in_place(kappa):
    """The heat equation by explicit differences, the interior updated in place from a
    copy, a space-varying conductivity."""
    u = np.sin(np.linspace(0.0, np.pi, 8))
    for _ in range(6):
        old = u.copy()
        u[1:-1] = old[1:-1] + 0.2 * kappa * (old[2:] - 2 * old[1:-1] + old[:-2])
    return np.sum(u**2)


def wave_equation_leapfrog(c):
    """The 1-D wave equation with three time levels rotated each step."""
    n = 9
    x = np.linspace(0.0, 1.0, n)
    prev = np.exp(-40 * (x - 0.5) ** 2)
    curr = prev.copy()
    r2 = (c[0] * 0.5) ** 2
    for _ in range(5):
        nxt = np.zeros(n)
        nxt[1:-1] = 2 * curr[1:-1] - prev[1:-1] + r2 * (curr[2:] - 2 * curr[1:-1] + curr[:-2])
        prev, curr = curr, nxt
    return np.sum(curr**2) + c[1] * np.sum(curr * x)


def laplace_jacobi_sweeps(boundary):
    """Jacobi sweeps of Laplace's equation on a small grid with a parameterised top edge,
    iterated until the update is small."""
    u = np.zeros((5, 5))
    u[0, :] = boundary
    for _ in range(40):
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        change = np.max(np.abs(new - u))
        u = new
        if change < 1e-3:
            break
    return np.sum(u[2, :] ** 2)


def burgers_upwind(nu):
    """Viscous Burgers by upwind advection and central diffusion, looping over cells."""
    u = 0.5 + 0.3 * np.sin(np.linspace(0.0, 2 * np.pi, 8, endpoint=False))
    dx, dt = 0.25, 0.02
    for _ in range(4):
        un = u.copy()
        for i in range(len(u)):
            left, right = un[i - 1], un[(i + 1) % len(u)]
            u[i] = (
                un[i]
                - dt / dx * un[i] * (un[i] - left)
                + nu[0] * dt / dx**2 * (right - 2 * un[i] + left)
            )
    return np.sum(u**3)


def reaction_diffusion_roll(params):
    """Gray-Scott style reaction-diffusion on a ring, the Laplacian by np.roll."""
    u = 1.0 - 0.2 * np.exp(-((np.arange(10) - 5.0) ** 2))
    v = 0.25 * np.exp(-((np.arange(10) - 5.0) ** 2))
    feed, kill = params[0], params[1]
    for _ in range(5):
        lap_u = np.roll(u, 1) + np.roll(u, -1) - 2 * u
        lap_v = np.roll(v, 1) + np.roll(v, -1) - 2 * v
        uvv = u * v * v
        u = u + 0.5 * (0.2 * lap_u - uvv + feed * (1 - u))
        v = v + 0.5 * (0.1 * lap_v + uvv - (feed + kill) * v)
    return np.sum(v**2) + np.mean(u)


# --- particles ------------------------------------------------------------------------------


def lennard_jones_energy(flat_positions):
    """Pairwise Lennard-Jones energy of a small cluster, double loop over pairs."""
    pos = flat_positions.reshape(-1, 2)
    energy = 0.0
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            r2 = np.sum((pos[i] - pos[j]) ** 2)
            inv6 = (1.0 / r2) ** 3
            energy += 4.0 * (inv6**2 - inv6)
    return energy


def lj_vectorised_with_mask(flat_positions):
    """The same energy vectorised: all pair distances, the diagonal masked out."""
    pos = flat_positions.reshape(-1, 2)
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(diff**2, axis=-1) + np.eye(len(pos))
    inv6 = 1.0 / r2**3
    pair = 4.0 * (inv6**2 - inv6)
    mask = 1.0 - np.eye(len(pos))
    return 0.5 * np.sum(pair * mask)


def nbody_velocity_verlet(masses):
    """Three gravitating bodies stepped by velocity Verlet, forces from a helper that
    returns accelerations; the final spread of positions."""
    pos = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.2]])
    vel = np.array([[0.0, -0.1], [0.0, 0.5], [-0.4, 0.0]])

    def accelerations(pos):
        acc = np.zeros_like(pos)
        for i in range(3):
            for j in range(3):
                if i != j:
                    d = pos[j] - pos[i]
                    acc[i] += masses[j] * d / (np.sum(d**2) + 0.05) ** 1.5
        return acc

    a = accelerations(pos)
    for _ in range(4):
        vel = vel + 0.05 * a
        pos = pos + 0.1 * vel
        a = accelerations(pos)
        vel = vel + 0.05 * a
    return np.sum(np.var(pos, axis=0))


def harmonic_crystal_energy(displacements):
    """Nearest-neighbour springs on a periodic 2-D lattice, neighbours by np.roll."""
    u = displacements.reshape(3, 3)
    right = np.roll(u, -1, axis=1) - u
    down = np.roll(u, -1, axis=0) - u
    return 0.5 * np.sum(right**2 + down**2) + 0.1 * np.sum(u**4)


def ising_mean_field(h):
    """Mean-field Ising magnetisations found by damped fixed-point iteration with a
    convergence test, then the free energy."""
    J = np.array([[0.0, 0.5, 0.2], [0.5, 0.0, 0.3], [0.2, 0.3, 0.0]])
    m = np.zeros(3)
    for _ in range(60):
        new = np.tanh(J @ m + h)
        if np.max(np.abs(new - m)) < 1e-10:
            break
        m = 0.5 * m + 0.5 * new
    entropy = -np.sum((1 + m) / 2 * np.log((1 + m) / 2) + (1 - m) / 2 * np.log((1 - m) / 2))
    return -0.5 * m @ J @ m - h @ m - entropy


def ising_energy_roll(spins_soft):
    """A relaxed Ising energy on a 4x4 torus: spins tanh(s), couplings by np.roll."""
    s = np.tanh(spins_soft.reshape(4, 4))
    energy = -np.sum(s * np.roll(s, 1, axis=0)) - np.sum(s * np.roll(s, 1, axis=1))
    return energy + 0.3 * np.sum(s)


# --- estimation and fitting -----------------------------------------------------------------


def kalman_log_likelihood(params):
    """The log-likelihood of a local-level model by the Kalman filter's prediction-error
    decomposition, noise variances as exp of the parameters."""
    q, r = np.exp(params[0]), np.exp(params[1])
    ys = np.array([0.3, 0.5, 0.2, 0.8, 1.0, 0.7])
    m, P = 0.0, 1.0
    loglik = 0.0
    for y in ys:
        P = P + q
        S = P + r
        K = P / S
        innovation = y - m
        loglik += -0.5 * (np.log(2 * np.pi * S) + innovation**2 / S)
        m = m + K * innovation
        P = (1 - K) * P
    return -loglik


def kalman_2d_tracking(log_q):
    """A constant-velocity tracker with matrices, Joseph-form covariance update."""
    F = np.array([[1.0, 0.5], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    Q = np.exp(log_q) * np.array([[0.02, 0.05], [0.05, 0.1]])
    Rn = np.array([[0.1]])
    x, P = np.zeros(2), np.eye(2)
    nll = 0.0
    for z in (0.1, 0.45, 1.1, 1.4):
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + Rn
        K = P @ H.T @ np.linalg.inv(S)
        resid = z - H @ x
        nll += 0.5 * (np.log(S[0, 0]) + resid[0] ** 2 / S[0, 0])
        x = x + K @ resid
        IKH = np.eye(2) - K @ H
        P = IKH @ P @ IKH.T + K @ Rn @ K.T
    return nll


def lotka_volterra_fit(params):
    """Predator-prey fitted to counts: RK2 integration, log-squared error."""
    a, b, c, d = np.exp(params)
    prey, pred = 1.0, 0.5
    observed = [(1.1, 0.45), (1.2, 0.42), (1.25, 0.41), (1.3, 0.42)]
    loss = 0.0
    h = 0.25
    for obs_prey, obs_pred in observed:
        for _ in range(2):
            dx = a * prey - b * prey * pred
            dy = d * prey * pred - c * pred
            mx, my = prey + 0.5 * h * dx, pred + 0.5 * h * dy
            prey = prey + h * (a * mx - b * mx * my)
            pred = pred + h * (d * mx * my - c * my)
        loss += (np.log(prey) - np.log(obs_prey)) ** 2 + (np.log(pred) - np.log(obs_pred)) ** 2
    return loss


def chemical_kinetics_abc(log_k):
    """A -> B -> C with rate constants exp(log_k), concentrations as a dict of species
    stepped by explicit Euler, the yield of B penalised."""
    k1, k2 = np.exp(log_k[0]), np.exp(log_k[1])
    conc = {"A": 1.0, "B": 0.0, "C": 0.0}
    for _ in range(10):
        rate1 = k1 * conc["A"]
        rate2 = k2 * conc["B"]
        conc = {
            "A": conc["A"] - 0.1 * rate1,
            "B": conc["B"] + 0.1 * (rate1 - rate2),
            "C": conc["C"] + 0.1 * rate2,
        }
    return (conc["B"] - 0.4) ** 2 + 0.1 * conc["C"] ** 2


def michaelis_menten_fit(params):
    """Enzyme kinetics v = Vmax S / (Km + S) fitted by least squares, parameters
    unpacked from a tuple."""
    vmax, km = params
    substrate = np.array([0.2, 0.5, 1.0, 2.0, 5.0])
    rates = np.array([0.15, 0.3, 0.45, 0.6, 0.72])
    predicted = vmax * substrate / (km + substrate)
    return np.mean((predicted - rates) ** 2)


def arrhenius_fit(params):
    """ln k = ln A - Ea / (R T) fitted to rates at four temperatures, weighted."""
    log_a, ea = params[0], params[1]
    temps = np.array([300.0, 320.0, 340.0, 360.0])
    log_rates = np.array([-2.0, -1.4, -0.9, -0.45])
    weights = np.array([1.0, 2.0, 2.0, 1.0])
    model = log_a - ea * 1000.0 / (8.314 * temps)
    return np.sum(weights * (model - log_rates) ** 2) / np.sum(weights)


def sir_epidemic(params):
    """An SIR model by RK2, the peak-time proxy by a softmax-weighted mean of times."""
    beta, gamma = np.exp(params[0]), np.exp(params[1])
    s, i, r = 0.99, 0.01, 0.0
    infected = []
    for _ in range(12):
        ds, di = -beta * s * i, beta * s * i - gamma * i
        s_half, i_half = s + 0.25 * ds, i + 0.25 * di
        s = s + 0.5 * (-beta * s_half * i_half)
        i = i + 0.5 * (beta * s_half * i_half - gamma * i_half)
        r = 1.0 - s - i
        infected.append(i)
    infected = np.array(infected)
    weights = np.exp(20 * infected) / np.sum(np.exp(20 * infected))
    return np.sum(weights * np.arange(12)) * 0.1 + r


# --- finite elements and structures ---------------------------------------------------------


def fem_bar_assembly(log_e):
    """A 1-D bar of elements of stiffness exp(log_e), the global matrix assembled with
    ``K[i:i + 2, i:i + 2] += ke``, fixed at one end, loaded at the other."""
    n = len(log_e)
    K = np.zeros((n + 1, n + 1))
    for i, le in enumerate(log_e):
        ke = np.exp(le) * np.array([[1.0, -1.0], [-1.0, 1.0]])
        K[i : i + 2, i : i + 2] += ke
    f = np.zeros(n + 1)
    f[-1] = 1.0
    u = np.linalg.solve(K[1:, 1:], f[1:])
    return f[1:] @ u + 0.1 * np.sum(u**2)


def fem_poisson_p1(source):
    """P1 finite elements for -u'' = s on a uniform mesh: stiffness and load assembled
    element by element, Dirichlet ends dropped, the energy of the solution."""
    n_el = 4
    h = 1.0 / n_el
    K = np.zeros((n_el + 1, n_el + 1))
    F = np.zeros(n_el + 1)
    for e in range(n_el):
        nodes = [e, e + 1]
        K[np.ix_(nodes, nodes)] += np.array([[1.0, -1.0], [-1.0, 1.0]]) / h
        F[nodes] += source[e] * h / 2
    u = np.linalg.solve(K[1:-1, 1:-1], F[1:-1])
    return 0.5 * u @ K[1:-1, 1:-1] @ u - F[1:-1] @ u


def truss_compliance(areas):
    """A three-bar truss: element stiffness from direction cosines, assembled by an index
    list, compliance of the loaded free node."""
    nodes = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 1.0], [0.5, 0.4]])
    bars = [(0, 3), (1, 3), (2, 3)]
    K = np.zeros((2, 2))
    for a, (i, j) in zip(areas, bars):
        d = nodes[j] - nodes[i]
        length = np.sqrt(d @ d)
        c = d / length
        K += a / length * np.outer(c, c)
    load = np.array([0.3, -1.0])
    u = np.linalg.solve(K, load)
    return load @ u + 0.5 * np.sum(areas**2)


def beam_deflection_fd(stiffness):
    """Euler-Bernoulli beam by a pentadiagonal finite-difference matrix built with np.diag
    offsets, a varying stiffness multiplying rows."""
    n = 6
    D4 = 6 * np.eye(n) - 4 * np.eye(n, k=1) - 4 * np.eye(n, k=-1) + np.eye(n, k=2) + np.eye(n, k=-2)
    A = np.diag(np.exp(stiffness)) @ D4 + 0.1 * np.eye(n)
    w = np.linalg.solve(A, np.ones(n))
    return np.max(w) + np.sum(w**2)


# --- optics, waves, lattices ---------------------------------------------------------------


def thin_lens_ray_trace(curvatures):
    """Paraxial rays through two thin lenses by ray-transfer matrices: the spot size at a
    screen."""
    heights = np.array([-0.5, -0.2, 0.2, 0.5])
    rays = np.stack([heights, np.zeros(4)])
    for c in curvatures:
        lens = np.array([[1.0, 0.0], [-0.5 * c, 1.0]])
        gap = np.array([[1.0, 1.0], [0.0, 1.0]])
        rays = gap @ lens @ rays
    return np.mean(rays[0] ** 2)


def snell_refraction_chain(indices):
    """A ray refracted through layers by Snell's law, written with arcsin, lateral shift
    accumulated."""
    angle = 0.3
    n_prev = 1.0
    shift = 0.0
    for n in indices:
        angle = np.arcsin(n_prev * np.sin(angle) / n)
        shift = shift + 0.5 * np.tan(angle)
        n_prev = n
    return shift**2 + angle


def thin_film_reflectance(thickness):
    """Reflectance of a coating stack by characteristic matrices in complex arithmetic,
    averaged over wavelengths."""
    n_layers = np.array([1.38, 2.1])
    total = 0.0
    for lam in (0.45, 0.55, 0.65):
        M = np.eye(2, dtype=complex)
        for n, d in zip(n_layers, thickness):
            delta = 2 * np.pi * n * d / lam
            layer = np.array(
                [[np.cos(delta), 1j * np.sin(delta) / n], [1j * n * np.sin(delta), np.cos(delta)]]
            )
            M = M @ layer
        n_sub = 1.52
        B = M[0, 0] + M[0, 1] * n_sub
        C = M[1, 0] + M[1, 1] * n_sub
        r = (B - C) / (B + C)
        total = total + np.abs(r) ** 2
    return total / 3


def diffraction_grating_intensity(phases):
    """Far-field intensity of a phased array by summing complex exponentials in a loop."""
    angles = np.linspace(-0.5, 0.5, 5)
    intensity = np.zeros(len(angles))
    for k, theta in enumerate(angles):
        field = 0.0 + 0.0j
        for m, phi in enumerate(phases):
            field += np.exp(1j * (2 * np.pi * m * np.sin(theta) + phi))
        intensity[k] = np.abs(field) ** 2
    return intensity[2] - 0.2 * np.sum(intensity)


def tight_binding_band_energy(hoppings):
    """Eigenvalues of a tight-binding chain Hamiltonian, the occupied-band energy."""
    n = len(hoppings) + 1
    H = np.zeros((n, n))
    for i, t in enumerate(hoppings):
        H[i, i + 1] = -t
        H[i + 1, i] = -t
    H += np.diag(0.1 * np.arange(n))
    energies = np.linalg.eigvalsh(H)
    return np.sum(energies[: n // 2])


def heat_exchanger_network(conductances):
    """Steady temperatures of a small thermal network: the conductance Laplacian built with
    np.add.at, solved with fixed boundary temperatures."""
    edges = np.array([[0, 1], [1, 2], [2, 3], [1, 3]])
    L = np.zeros((4, 4))
    g = np.exp(conductances)
    np.add.at(L, (edges[:, 0], edges[:, 0]), g)
    np.add.at(L, (edges[:, 1], edges[:, 1]), g)
    np.add.at(L, (edges[:, 0], edges[:, 1]), -g)
    np.add.at(L, (edges[:, 1], edges[:, 0]), -g)
    fixed = np.array([100.0, 20.0])
    interior = L[1:3, 1:3]
    rhs = -L[1:3, [0, 3]] @ fixed
    temps = np.linalg.solve(interior, rhs)
    return np.sum((temps - 50.0) ** 2) / 100.0


PROGRAMS = [
    (rk4_van_der_pol, np.array([0.8, 1.2])),
    (leapfrog_kepler, np.array([1.0, 0.1])),
    (symplectic_euler_chain, np.array([1.0, 1.5, 0.8])),
    (damped_pendulum, np.array([2.0, 0.4])),
    (adaptive_euler_decay, np.array([1.5, 0.7])),
    (rk45_like_pair, np.array([2.0, 0.3])),
    (heat_explicit_in_place, 0.5 + 0.2 * R.random(6)),
    (wave_equation_leapfrog, np.array([0.9, 0.2])),
    (laplace_jacobi_sweeps, np.array([0.0, 0.4, 1.0, 0.4, 0.0])),
    (burgers_upwind, np.array([0.05])),
    (reaction_diffusion_roll, np.array([0.04, 0.06])),
    (lennard_jones_energy, np.array([0.0, 0.0, 1.1, 0.1, 0.5, 1.0])),
    (lj_vectorised_with_mask, np.array([0.0, 0.0, 1.1, 0.1, 0.5, 1.0])),
    (nbody_velocity_verlet, np.array([1.0, 0.8, 0.6])),
    (harmonic_crystal_energy, _n(9, scale=0.3)),
    (ising_mean_field, np.array([0.2, -0.1, 0.3])),
    (ising_energy_roll, _n(16)),
    (kalman_log_likelihood, np.array([-1.0, -0.5])),
    (kalman_2d_tracking, np.array(0.3)),
    (lotka_volterra_fit, np.log(np.array([0.6, 0.4, 0.5, 0.3]))),
    (chemical_kinetics_abc, np.array([0.2, -0.5])),
    (michaelis_menten_fit, np.array([0.9, 0.8])),
    (arrhenius_fit, np.array([3.0, 15.0])),
    (sir_epidemic, np.array([-0.5, -1.5])),
    (fem_bar_assembly, _n(3, scale=0.3)),
    (fem_poisson_p1, np.array([1.0, 0.5, -0.3, 0.8])),
    (truss_compliance, np.array([1.0, 0.8, 1.2])),
    (beam_deflection_fd, _n(6, scale=0.2)),
    (thin_lens_ray_trace, np.array([0.6, 0.9])),
    (snell_refraction_chain, np.array([1.3, 1.5, 1.2])),
    (thin_film_reflectance, np.array([0.1, 0.07])),
    (diffraction_grating_intensity, _n(4)),
    (tight_binding_band_energy, np.array([1.0, 0.8, 1.2, 0.9])),
    (heat_exchanger_network, _n(4, scale=0.3)),
]

# forward mode over a gradient whose save stack holds reads of a buffer filled in a loop
REFUSED = {
    "laplace_jacobi_sweeps": S2S_HVP,
    "nbody_velocity_verlet": S2S_HVP,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))

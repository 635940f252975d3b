"""Three programs written the way users write them, each built from helpers called in
loops: an RK4 integrator, a convolution layer with corr2d and pool2d, and an LSTM whose
step calls gate helpers. Every engine, first and second call, against finite
differences, and mode="auto" without falling back to the tape."""

from __future__ import annotations

import numpy as np
from test_helper_calls import check_gradient, check_second_order

RNG = np.random.default_rng(2026)


# RK4 ---------------------------------------------------------------------------------------
def rhs(state, params):
    """A damped pendulum: d(angle)/dt = velocity, d(velocity)/dt = -k sin(angle) - c v."""
    angle, velocity = state[0], state[1]
    return np.stack([velocity, -params[0] * np.sin(angle) - params[1] * velocity])


def rk4_step(state, params, dt):
    k1 = rhs(state, params)
    k2 = rhs(state + 0.5 * dt * k1, params)
    k3 = rhs(state + 0.5 * dt * k2, params)
    k4 = rhs(state + dt * k3, params)
    return state + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def integrate(params, state, steps=8, dt=0.1):
    trajectory = [state]
    for _ in range(steps):
        state = rk4_step(state, params, dt)
        trajectory.append(state)
    return trajectory


def pendulum_loss(params, state, target):
    trajectory = integrate(params, state)
    loss = 0.0
    for point in trajectory:
        loss = loss + np.sum((point - target) ** 2)
    return loss / len(trajectory)


def test_rk4_integrator_with_an_rhs_helper():
    args = (np.array([1.3, 0.2]), np.array([0.8, -0.1]), np.array([0.1, 0.0]))
    check_gradient(pendulum_loss, args, wrt=0)
    check_gradient(pendulum_loss, args, wrt=1)
    check_second_order(pendulum_loss, args)


# convolution layer ------------------------------------------------------------------------
def corr2d(X, K):
    h, w = K.shape
    Y = np.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = np.sum(X[i : i + h, j : j + w] * K)
    return Y


def pool2d(X, size):
    Y = np.zeros((X.shape[0] - size + 1, X.shape[1] - size + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = np.max(X[i : i + size, j : j + size])
    return Y


def conv_layer(kernels, image, bias):
    total = 0.0
    for channel in range(kernels.shape[0]):
        feature = np.tanh(corr2d(image, kernels[channel]) + bias[channel])
        pooled = pool2d(feature, 2)
        total = total + np.sum(pooled**2)
    return total


def test_conv_layer_with_corr2d_and_pool2d_helpers():
    # item writes into np.zeros (the textbook's corr2d): the tape has none, and says so
    args = (RNG.standard_normal((2, 2, 2)), RNG.standard_normal((5, 5)), RNG.standard_normal(2))
    check_gradient(conv_layer, args, wrt=0, modes=("s2s", "auto"))
    check_gradient(conv_layer, args, wrt=2, modes=("s2s", "auto"))
    check_second_order(conv_layer, args, modes=("s2s",))


def stacked_corr2d(X, K):
    h, w = K.shape
    rows = []
    for i in range(X.shape[0] - h + 1):
        row = [np.sum(X[i : i + h, j : j + w] * K) for j in range(X.shape[1] - w + 1)]
        rows.append(np.stack(row))
    return np.stack(rows)


def stacked_pool2d(X, size):
    rows = []
    for i in range(X.shape[0] - size + 1):
        row = [np.max(X[i : i + size, j : j + size]) for j in range(X.shape[1] - size + 1)]
        rows.append(np.stack(row))
    return np.stack(rows)


def stacked_conv_layer(kernels, image, bias):
    total = 0.0
    for channel in range(kernels.shape[0]):
        feature = np.tanh(stacked_corr2d(image, kernels[channel]) + bias[channel])
        pooled = stacked_pool2d(feature, 2)
        total = total + np.sum(pooled**2)
    return total


def test_conv_layer_with_helpers_that_stack_their_results():
    args = (RNG.standard_normal((2, 2, 2)), RNG.standard_normal((5, 5)), RNG.standard_normal(2))
    check_gradient(stacked_conv_layer, args, wrt=0)
    check_gradient(stacked_conv_layer, args, wrt=1)
    check_second_order(stacked_conv_layer, args)


# LSTM -------------------------------------------------------------------------------------
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def gate(W, U, b, x, h):
    return sigmoid(x @ W + h @ U + b)


def candidate_cell(W, U, b, x, h):
    return np.tanh(x @ W + h @ U + b)


def lstm_step(params, x, h, c):
    W, U, b = params["W"], params["U"], params["b"]
    i = gate(W[0], U[0], b[0], x, h)
    f = gate(W[1], U[1], b[1], x, h)
    o = gate(W[2], U[2], b[2], x, h)
    candidate = candidate_cell(W[3], U[3], b[3], x, h)
    c = f * c + i * candidate
    h = o * np.tanh(c)
    return h, c


def lstm_loss(params, inputs, target):
    h = np.zeros(target.shape)
    c = np.zeros(target.shape)
    for x in inputs:
        h, c = lstm_step(params, x, h, c)
    return np.sum((h - target) ** 2)


def activated(W, U, b, x, h, activation):
    return activation(x @ W + h @ U + b)


def lstm_with_activations_passed_in(inputs, params, target):
    W, U, b = params["W"], params["U"], params["b"]
    h = np.zeros(target.shape)
    c = np.zeros(target.shape)
    for x in inputs:
        i = activated(W[0], U[0], b[0], x, h, sigmoid)
        f = activated(W[1], U[1], b[1], x, h, sigmoid)
        candidate = activated(W[3], U[3], b[3], x, h, np.tanh)
        c = f * c + i * candidate
        h = np.tanh(c)
    return np.sum((h - target) ** 2)


def lstm_params(n_in, n_hidden):
    return {
        "W": RNG.standard_normal((4, n_in, n_hidden)) * 0.5,
        "U": RNG.standard_normal((4, n_hidden, n_hidden)) * 0.5,
        "b": RNG.standard_normal((4, n_hidden)) * 0.1,
    }


def test_lstm_step_calling_gate_helpers():
    args = (lstm_params(3, 2), RNG.standard_normal((4, 3)), RNG.standard_normal(2))
    check_gradient(lstm_loss, args, wrt=0)
    check_gradient(lstm_loss, args, wrt=1)
    check_second_order(lstm_loss_of_inputs, (args[1], args[0], args[2]))


def lstm_loss_of_inputs(inputs, params, target):
    return lstm_loss(params, inputs, target)


def test_lstm_with_activation_functions_passed_to_a_helper():
    args = (RNG.standard_normal((3, 3)), lstm_params(3, 2), RNG.standard_normal(2))
    check_gradient(lstm_with_activations_passed_in, args, wrt=0)
    check_gradient(lstm_with_activations_passed_in, args, wrt=1)
    # forward mode over the gradient follows the pullbacks of the calls of `activation`,
    # resolved at run time, along the values they were made from
    check_second_order(lstm_with_activations_passed_in, args)

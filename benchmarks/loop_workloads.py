"""The loop workloads of `benchmarks/loops.py`, each written three ways.

- `plain(*args)`: NumPy with a plain Python `for` loop, as people write it. Run eagerly
  it is the NumPy figure; under `jitlib.jit` the tracer unrolls it.
- `loop(*args)`: the same computation through `jitlib.numpy.fori_loop` / `scan`, which
  jitlib traces as one `while` op (and which runs as a Python loop outside jit).
- `jax(jnp, lax, *args)`: the JAX user's version with `lax.fori_loop` / `lax.scan`.

`make(rng, trips)` builds float32 arguments whose loop runs `trips` times; `static` are
the argument positions that are Python ints (the step count), static for both jits.
"""
import dataclasses
from typing import Callable

import numpy as np

import jitlib.numpy as jnp


@dataclasses.dataclass(frozen=True)
class LoopWorkload:
    name: str
    make: Callable          # (rng, trips) -> args
    plain: Callable
    loop: Callable
    jax: Callable           # (jnp, lax, *args)
    static: tuple = ()
    trips: tuple = (10, 1000)
    note: str = ""


# -- (a) 2-D Jacobi stencil, two sweeps per trip (A -> B, then B -> A)

def jacobi_make(rng, trips, n=256):
    A = rng.random((n, n), dtype=np.float32)
    return A, A.copy(), trips


def jacobi_plain(A, B, steps):
    A, B = A.copy(), B.copy()
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                              + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def jacobi_loop(A, B, steps):
    def sweep(i, grids):
        A, B = grids
        B = B.copy()
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                              + A[2:, 1:-1] + A[:-2, 1:-1])
        A = A.copy()
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                              + B[2:, 1:-1] + B[:-2, 1:-1])
        return A, B
    return jnp.fori_loop(0, steps, sweep, (A, B))


def jacobi_jax(np_, lax, A, B, steps):
    def sweep(i, grids):
        A, B = grids
        B = B.at[1:-1, 1:-1].set(0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:]
                                        + A[2:, 1:-1] + A[:-2, 1:-1]))
        A = A.at[1:-1, 1:-1].set(0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:]
                                        + B[2:, 1:-1] + B[:-2, 1:-1]))
        return A, B
    return lax.fori_loop(0, steps, sweep, (A, B))


# -- (b) leapfrog (kick-drift-kick) N-body step, softened so the diagonal needs no mask

DT = 0.001


def nbody_make(rng, trips, n=64):
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    vel = (0.1 * rng.standard_normal((n, 3))).astype(np.float32)
    mass = rng.uniform(0.5, 1.0, n).astype(np.float32) / n
    return pos, vel, mass, trips


def accel(xp, pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(-1) + 0.01        # a body's own term has d = 0: it adds nothing
    inv = mass[None, :] / (r2 * xp.sqrt(r2))
    return (d * inv[:, :, None]).sum(1)


def nbody_plain(pos, vel, mass, steps):
    a = accel(np, pos, mass)
    for _ in range(steps):
        vel = vel + 0.5 * DT * a
        pos = pos + DT * vel
        a = accel(np, pos, mass)
        vel = vel + 0.5 * DT * a
    return pos, vel


def _leapfrog(xp, mass):
    def step(i, state):
        pos, vel, a = state
        vel = vel + 0.5 * DT * a
        pos = pos + DT * vel
        a = accel(xp, pos, mass)
        return pos, vel + 0.5 * DT * a, a
    return step


def nbody_loop(pos, vel, mass, steps):
    pos, vel, _ = jnp.fori_loop(0, steps, _leapfrog(np, mass), (pos, vel, accel(np, pos, mass)))
    return pos, vel


def nbody_jax(np_, lax, pos, vel, mass, steps):
    pos, vel, _ = lax.fori_loop(0, steps, _leapfrog(np_, mass),
                                (pos, vel, accel(np_, pos, mass)))
    return pos, vel


# -- (c) Doolittle LU by rows, no pivoting (the matrix is diagonally dominant)

def lu_make(rng, trips):
    n = trips + 1                     # a row loop of n - 1 trips
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    return (A.astype(np.float32),)


def lu_plain(A):
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return A


def _lu_row(xp, n):
    # the trip's row k is traced, so its slices cannot shrink: masks keep the whole matrix
    idx = xp.arange(n)

    def step(k, A):
        below = idx > k
        l = xp.where(below, A[:, k] / A[k, k], 0.0)
        u = xp.where(below, A[k, :], 0.0)
        A = A - xp.outer(l, u)
        return xp.where(below[:, None] & (idx == k)[None, :], l[:, None], A)
    return step


def lu_loop(A):
    return jnp.fori_loop(0, A.shape[0] - 1, _lu_row(np, A.shape[0]), A)


def lu_jax(np_, lax, A):
    return lax.fori_loop(0, A.shape[0] - 1, _lu_row(np_, A.shape[0]), A)


# -- (d) an Elman RNN over a sequence, hidden 64, input 32

def rnn_make(rng, trips, hidden=64, inputs=32):
    h0 = np.zeros(hidden, np.float32)
    xs = rng.standard_normal((trips, inputs)).astype(np.float32)
    W = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    U = (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32)
    b = (0.1 * rng.standard_normal(hidden)).astype(np.float32)
    return h0, xs, W, U, b


def rnn_plain(h, xs, W, U, b):
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t] @ U + b)
        hs.append(h)
    return h, np.stack(hs)


def rnn_loop(h0, xs, W, U, b):
    def cell(h, x):
        h = np.tanh(h @ W + x @ U + b)
        return h, h
    return jnp.scan(cell, h0, xs)


def rnn_jax(np_, lax, h0, xs, W, U, b):
    def cell(h, x):
        h = np_.tanh(h @ W + x @ U + b)
        return h, h
    return lax.scan(cell, h0, xs)


WORKLOADS = {w.name: w for w in (
    LoopWorkload("jacobi_256", jacobi_make, jacobi_plain, jacobi_loop, jacobi_jax,
                 static=(2,), note="256x256 float32, 2 sweeps per trip"),
    LoopWorkload("nbody_64", nbody_make, nbody_plain, nbody_loop, nbody_jax, static=(3,),
                 note="64 bodies, kick-drift-kick"),
    LoopWorkload("lu_rows", lu_make, lu_plain, lu_loop, lu_jax, trips=(10, 63),
                 note="n-1 row trips: 11x11 and 64x64 (1000 trips would be 1001x1001)"),
    LoopWorkload("rnn_scan", rnn_make, rnn_plain, rnn_loop, rnn_jax,
                 note="hidden 64, input 32, one step per trip"),
)}

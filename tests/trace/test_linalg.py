"""np.linalg's factorizations and solvers, np.cov and np.corrcoef inside jit (issue 23,
part 6).

Values are checked against eager NumPy on the interpreter, cpu and jax backends, in
float32 and float64, on stacks of matrices and on ill-conditioned ones. Eigenvectors,
singular vectors and QR factors are unique only up to signs, so for them the checks
compare invariants (reconstruction, orthogonality, |R|). Derivatives are compared
with jax.grad of the same function written with jax.numpy.
"""
import warnings

import jax
import jax.numpy as jnp_jax
import numpy as np
import pytest

import jitlib
import jitlib.backends.jax  # noqa: F401 - turns on JAX's float64, which the oracles need
import jitlib.numpy as jnp
from jitlib import errors
from jitlib.testing import check_backends

BACKENDS = ("interpreter", "cpu", "jax")
F32, F64 = np.float32, np.float64
TOL = {F32: dict(rtol=2e-4, atol=2e-4), F64: dict(rtol=1e-9, atol=1e-10)}


def check(fn, *args, dtype=F64, scale=1.0, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tol = {k: v * scale for k, v in TOL[dtype].items()}
        return check_backends(fn, *args, backends=BACKENDS, **tol, **kwargs)


def rand(*shape, dtype=F64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def spd(*shape, dtype=F64, seed=0):
    a = rand(*shape, dtype=F64, seed=seed)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def ill_conditioned(n, cond=1e6, seed=0):
    """A matrix with singular values from 1 down to 1/cond (non-singular)."""
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q1 @ np.diag(np.geomspace(1, 1 / cond, n)) @ q2


DTYPES = [F32, F64]
SHAPES = [(4, 4), (2, 3, 3)]


# -- solvers and determinants

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_solve_inv_det_slogdet(dtype, shape):
    a = rand(*shape, dtype=dtype) + 3 * np.eye(shape[-1], dtype=dtype)
    b = rand(*shape[:-1], 2, dtype=dtype, seed=1)
    check(np.linalg.solve, a, b, dtype=dtype)
    check(np.linalg.inv, a, dtype=dtype)
    check(np.linalg.det, a, dtype=dtype)
    check(lambda x: tuple(np.linalg.slogdet(x)), a, dtype=dtype)


def test_solve_takes_a_vector_and_broadcasts_batches():
    a = rand(2, 1, 4, 4) + 4 * np.eye(4)
    check(np.linalg.solve, a[0, 0], rand(4, seed=1))
    check(np.linalg.solve, a, rand(3, 4, 2, seed=1))
    check(np.linalg.solve, a[0, 0], rand(5, 4, 1, seed=1))


def test_ill_conditioned_solves_are_as_accurate_as_numpy():
    a = ill_conditioned(6, 1e6)
    x = rand(6, 2, seed=1)
    b = a @ x
    # both solutions carry errors near cond * eps; they agree within that
    check(np.linalg.solve, a, b, scale=1e4)
    check(np.linalg.inv, a, scale=1e4)
    check(np.linalg.det, a)
    check(lambda m: tuple(np.linalg.slogdet(m)), a)


def test_det_of_a_permuted_matrix_has_the_right_sign():
    a = np.eye(4)[[1, 0, 3, 2]] * 2.0
    check(np.linalg.det, a)
    check(np.linalg.det, np.eye(3)[[2, 0, 1]] * 3.0)


def test_singular_matrices_give_inf_or_nan_not_an_error():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    for backend in BACKENDS:
        x = jitlib.jit(np.linalg.solve, backend=backend)(a, np.ones(2))
        assert not np.isfinite(x).all()
        assert jitlib.jit(np.linalg.det, backend=backend)(a) == 0
        sign, logdet = jitlib.jit(np.linalg.slogdet, backend=backend)(a)
        assert sign == 0 and logdet == -np.inf
        chol = jitlib.jit(np.linalg.cholesky, backend=backend)(-np.eye(2))
        assert np.isnan(chol[np.tril_indices(2)]).all() and chol[0, 1] == 0   # as JAX


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
def test_solve_triangular_is_scipys(dtype, lower, trans):
    import scipy.linalg
    a = rand(4, 4, dtype=dtype) + 4 * np.eye(4, dtype=dtype)
    b = rand(4, 3, dtype=dtype, seed=1)
    for unit in (False, True):
        want = scipy.linalg.solve_triangular(a, b, trans, lower, unit)
        for backend in BACKENDS:
            got = jitlib.jit(lambda x, y: jnp.linalg.solve_triangular(
                x, y, trans, lower, unit), backend=backend)(a, b)
            np.testing.assert_allclose(got, want, **TOL[dtype])
            assert got.dtype == want.dtype
    batched = jitlib.jit(lambda x, y: jnp.linalg.solve_triangular(x, y, lower=True))(
        np.stack([a, 2 * a]), b[:, 0])
    np.testing.assert_allclose(batched[1], scipy.linalg.solve_triangular(2 * a, b[:, 0],
                                                                         lower=True),
                               **TOL[dtype])


# -- factorizations

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_cholesky_and_eigvalsh(dtype, shape):
    a = spd(*shape, dtype=dtype)
    check(np.linalg.cholesky, a, dtype=dtype)
    check(lambda x: np.linalg.cholesky(x, upper=True), a, dtype=dtype)
    check(np.linalg.eigvalsh, a, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_eigh_reconstructs(dtype, shape):
    def invariants(x):
        w, v = np.linalg.eigh(x)
        return w, x @ v - v * w[..., None, :], np.swapaxes(v, -1, -2) @ v
    check(invariants, spd(*shape, dtype=dtype), dtype=dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_reconstructs(dtype, shape, full):
    def invariants(x):
        u, s, vh = np.linalg.svd(x, full_matrices=full)
        k = s.shape[-1]
        rebuilt = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
        return s, rebuilt, np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)
    check(invariants, rand(*shape, dtype=dtype), dtype=dtype, scale=10)
    check(np.linalg.svdvals, rand(*shape, dtype=dtype), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_reconstructs(dtype, shape, mode):
    def invariants(x):
        q, r = np.linalg.qr(x, mode)
        return q @ r, np.swapaxes(q, -1, -2) @ q, np.abs(r)
    check(invariants, rand(*shape, dtype=dtype), dtype=dtype, scale=10)
    check(lambda x: np.abs(np.linalg.qr(x, "r")), rand(*shape, dtype=dtype), dtype=dtype,
          scale=10)


# -- through the SVD

@pytest.mark.parametrize("dtype", DTYPES)
def test_lstsq_pinv_and_rank(dtype):
    a = rand(6, 3, dtype=dtype)
    check(lambda x, y: np.linalg.lstsq(x, y), a, rand(6, dtype=dtype, seed=1), dtype=dtype,
          scale=10)
    check(lambda x, y: np.linalg.lstsq(x, y)[:3], a, rand(6, 2, dtype=dtype, seed=1),
          dtype=dtype, scale=10)
    check(lambda x, y: np.linalg.lstsq(x, y)[0], a.T, rand(3, dtype=dtype, seed=1),
          dtype=dtype, scale=10)
    check(np.linalg.pinv, a, dtype=dtype, scale=10)
    check(np.linalg.matrix_rank, a, dtype=dtype)
    deficient = np.concatenate([a, a[:, :1]], axis=1)
    check(np.linalg.matrix_rank, deficient, dtype=dtype)
    check(lambda x, y: np.linalg.lstsq(x, y)[0], deficient, rand(6, dtype=dtype, seed=1),
          dtype=dtype, scale=100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_of_every_order(dtype, ord):
    x = rand(3, 4, 5, dtype=dtype)
    check(lambda a: np.linalg.norm(a, ord, axis=(1, 2)), x, dtype=dtype, scale=10)
    check(lambda a: np.linalg.norm(a, ord, axis=(2, 0), keepdims=True), x, dtype=dtype,
          scale=10)
    check(lambda a: np.linalg.norm(a[0], ord), x, dtype=dtype, scale=10)


@pytest.mark.parametrize("ord", [None, 0, 1, -1, 2, -2, 3, 0.5, np.inf, -np.inf])
def test_vector_norms_of_every_order(ord):
    check(lambda a: np.linalg.norm(a, ord), rand(7))
    check(lambda a: np.linalg.norm(a, ord, axis=1), rand(3, 7))


# -- statistics

@pytest.mark.parametrize("dtype", DTYPES)
def test_cov_and_corrcoef(dtype):
    x, y = rand(3, 10, dtype=dtype), rand(10, dtype=dtype, seed=1)
    check(np.cov, x, dtype=dtype)
    check(lambda a: np.cov(a, rowvar=False, bias=True), x.T, dtype=dtype)
    check(lambda a, b: np.cov(a, b, ddof=2), x, y, dtype=dtype)
    check(np.cov, y, dtype=dtype)
    w = np.arange(1, 11)
    check(lambda a: np.cov(a, fweights=w, aweights=w / 10.0), x, dtype=dtype)
    check(lambda a: np.cov(a, aweights=w / 10.0, ddof=0), x, dtype=dtype)
    check(np.corrcoef, x, dtype=dtype)
    check(lambda a, b: np.corrcoef(a, b, rowvar=True), x[0], y, dtype=dtype)
    check(np.corrcoef, y, dtype=dtype)


# -- derivatives: jax.grad of the same function

def _grad_matches_jax(fn, jax_fn, *args, rtol=1e-7):
    got = jitlib.grad(fn)(*args)
    want = jax.grad(jax_fn)(*args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-9)


def test_grad_of_solve_inv_det_slogdet_is_jaxs():
    a = rand(2, 4, 4) + 4 * np.eye(4)
    b = rand(2, 4, 2, seed=1)
    _grad_matches_jax(lambda x: np.sum(np.sin(np.linalg.solve(x, b))),
                      lambda x: jnp_jax.sum(jnp_jax.sin(jnp_jax.linalg.solve(x, b))), a)
    _grad_matches_jax(lambda y: np.sum(np.linalg.solve(a, y) ** 2),
                      lambda y: jnp_jax.sum(jnp_jax.linalg.solve(a, y) ** 2), b)
    _grad_matches_jax(lambda x: np.sum(np.linalg.inv(x) ** 2),
                      lambda x: jnp_jax.sum(jnp_jax.linalg.inv(x) ** 2), a)
    _grad_matches_jax(lambda x: np.sum(np.linalg.det(x)),
                      lambda x: jnp_jax.sum(jnp_jax.linalg.det(x)), a)
    _grad_matches_jax(lambda x: np.sum(np.linalg.slogdet(x)[1]),
                      lambda x: jnp_jax.sum(jnp_jax.linalg.slogdet(x)[1]), a)


def test_grad_of_cholesky_and_eigh_is_jaxs():
    a = spd(2, 4, 4)
    _grad_matches_jax(lambda x: np.sum(np.cos(np.linalg.cholesky(x))),
                      lambda x: jnp_jax.sum(jnp_jax.cos(jnp_jax.linalg.cholesky(x))), a)
    _grad_matches_jax(lambda x: np.sum(np.linalg.eigvalsh(x) ** 3),
                      lambda x: jnp_jax.sum(jnp_jax.linalg.eigvalsh(x) ** 3), a)

    def vectors(eigh, x):
        w, v = eigh(x)
        return (v[..., 0, :] ** 2 * w).sum()    # sign-free in the eigenvectors
    _grad_matches_jax(lambda x: vectors(np.linalg.eigh, x),
                      lambda x: vectors(jnp_jax.linalg.eigh, x), a)


def test_grad_of_norms_lstsq_and_qr_is_jaxs():
    x = rand(5, 3)
    for ord in (2, "nuc", -2):
        _grad_matches_jax(lambda m: np.linalg.norm(m, ord),
                          lambda m: jnp_jax.linalg.norm(m, ord), x)
    y = rand(5, seed=1)
    _grad_matches_jax(lambda v: np.sum(np.linalg.lstsq(x, v)[0] ** 2),
                      lambda v: jnp_jax.sum(jnp_jax.linalg.lstsq(x, v)[0] ** 2), y)
    _grad_matches_jax(lambda m: np.sum(np.linalg.qr(m)[1] ** 2),
                      lambda m: jnp_jax.sum(jnp_jax.linalg.qr(m)[1] ** 2), x)


def test_grad_through_singular_vectors_is_refused_at_the_users_line():
    with pytest.raises(errors.UnsupportedError, match="singular vectors") as info:
        jitlib.grad(lambda m: np.sum(np.linalg.svd(m)[0]))(rand(3, 3))
    assert info.value.location.file == __file__


def test_second_derivatives_of_slogdet_and_cholesky_are_jaxs():
    a = rand(3, 3) + 3 * np.eye(3)
    got = jitlib.hessian(lambda x: np.linalg.slogdet(x)[1])(a)
    want = jax.hessian(lambda x: jnp_jax.linalg.slogdet(x)[1])(a)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    got = jitlib.hessian(lambda x: np.sum(np.linalg.cholesky(x @ x.T + np.eye(3))))(a)
    want = jax.hessian(lambda x: jnp_jax.sum(jnp_jax.linalg.cholesky(x @ x.T + jnp_jax.eye(3))))(a)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_grad_of_solve_matches_finite_differences():
    a, b = rand(3, 3) + 3 * np.eye(3), rand(3, seed=1)

    def f(x):
        return np.sum(np.linalg.solve(x, b) ** 3)
    g = jitlib.grad(f)(a)
    d = rand(3, 3, seed=2)
    h = 1e-6
    numeric = (f(a + h * d) - f(a - h * d)) / (2 * h)
    assert abs(numeric - np.sum(g * d)) < 1e-6 * (1 + abs(numeric))


def test_vmap_of_solve_and_cholesky_is_a_loop():
    a = spd(5, 3, 3)
    b = rand(5, 3, seed=1)
    got = jitlib.vmap(lambda x, y: np.linalg.solve(x, y))(a, b)
    np.testing.assert_allclose(got, [np.linalg.solve(x, y) for x, y in zip(a, b)], rtol=1e-12)
    got = jitlib.vmap(np.linalg.cholesky)(a)
    np.testing.assert_allclose(got, np.linalg.cholesky(a), rtol=1e-12)


# -- errors

def test_non_square_and_half_precision_inputs_raise_naming_the_line():
    with pytest.raises(errors.ShapeError, match="must be square") as info:
        jitlib.jit(np.linalg.inv)(np.ones((2, 3)))
    assert info.value.location is not None and info.value.location.file == __file__
    with pytest.raises(TypeError, match="unsupported in linalg"):
        jitlib.jit(np.linalg.det)(np.ones((2, 2), np.float16))
    with pytest.raises(errors.ShapeError, match="at least two-dimensional"):
        jitlib.jit(np.linalg.cholesky)(np.ones(3))


def test_empty_matrices_have_numpys_determinants():
    check(lambda x: tuple(np.linalg.slogdet(x)), np.zeros((2, 0, 0)))
    check(np.linalg.det, np.zeros((3, 0, 0)))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_solve_factors_each_matrix_once_and_sees_new_values(backend, monkeypatch):
    """np.linalg.solve is two lu ops on one operand (factors, permutation): the second
    reuses the first's factorization (linalg_reference._lu_factors), and a call with
    changed values factors again."""
    import scipy.linalg
    calls = []
    real = scipy.linalg.lu_factor

    def counted(m, **kwargs):
        calls.append(m.shape)
        return real(m, **kwargs)
    monkeypatch.setattr(scipy.linalg, "lu_factor", counted)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 5, 5)), rng.standard_normal((3, 5, 2))
    f = jitlib.jit(np.linalg.solve, backend=backend)
    np.testing.assert_allclose(f(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    assert len(calls) == 3, calls
    a[1] = np.eye(5)[::-1]          # in place: the same array object, new values
    np.testing.assert_allclose(f(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    assert len(calls) == 6, calls


def test_batches_shared_between_threads_keep_their_bits(monkeypatch):
    # large enough that the cpu backend's LAPACK rules share the batch between threads;
    # one matrix is not positive definite: its factor is NaN, the others are untouched
    rng = np.random.default_rng(5)
    g = rng.standard_normal((12, 128, 128)).astype(np.float32) / 12
    a = g @ np.swapaxes(g, -1, -2) + np.eye(128, dtype=np.float32)
    a[3] = -np.eye(128, dtype=np.float32)
    b = rng.standard_normal((12, 128, 5)).astype(np.float32)

    def factor_and_solve(a, b):
        low = np.linalg.cholesky(a)
        return low, np.linalg.solve(low, b), np.linalg.solve(a, b)
    monkeypatch.setenv("JITLIB_NUM_THREADS", "2")
    shared = jitlib.jit(factor_and_solve, backend="cpu")(a, b)
    monkeypatch.setenv("JITLIB_NUM_THREADS", "1")
    alone = jitlib.jit(factor_and_solve, backend="cpu")(a, b)
    for x, y in zip(shared, alone):
        np.testing.assert_array_equal(x, y)
    ok = np.arange(12) != 3
    np.testing.assert_array_equal(shared[0][ok], np.linalg.cholesky(a[ok]))
    assert np.isnan(shared[0][3][np.tril_indices(128)]).all()
    np.testing.assert_allclose(shared[2][ok], np.linalg.solve(a[ok], b[ok]), rtol=1e-4,
                               atol=1e-5)

"""The loss table against the numba dispatch and against the definitions, row by row.

Every test is parametrized over the whole table (:func:`ooc_kernels.losses.available_losses`),
a loss with a hyper-parameter at its default and at the values of :data:`PARAMS` too:
a row added to the table is checked here without editing this file.  Each check is an
assertion helper that takes a row; the mutant tests feed deliberately broken rows to the same
helpers and expect them to fail.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ooc_kernels._jit.losses import (
    dual_prox,
    loss_conjugate,
    loss_derivative,
    loss_grad_value,
    loss_gradient,
    loss_value,
)
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import Loss, available_losses, get_loss, loss_by_id, losses_for
from ooc_kernels.losses import _twins as tw

TABLE = available_losses()
#: Values of the hyper-parameter checked besides each row's default (epsilon = 0 is the
#: least absolute deviation, whose kink is at r = 0).
PARAMS = {"huber": (0.3, 3.0), "epsilon_insensitive": (0.0, 1.5), "quantile": (0.1, 0.9)}
#: Every row, and the parametrized ones at other values: ids like "quantile[0.9]".
CASES = list(TABLE) + [f"{name}[{p}]" for name in TABLE for p in PARAMS.get(name, ())]


def _case(case: str) -> Loss:
    """The row of a case id, its hyper-parameter set."""
    name, _, param = case.partition("[")
    loss = get_loss(name)
    return loss.with_param(float(param[:-1])) if param else loss

SCALAR_KERNELS = {"loss_value": loss_value, "loss_derivative": loss_derivative,
                  "loss_conjugate": loss_conjugate, "dual_prox": dual_prox}
TWIN = {"rtol": 1e-12, "atol": 1e-13}
#: Duals step sizes and problem sizes of the prox checks.
STEPS = [(0.05, 1.0), (1.0, 30.0), (20.0, 2.0)]


# --------------------------------------------------------------------------------------
# sample points by target kind
# --------------------------------------------------------------------------------------
def _targets(loss: Loss, rng, n: int, C: int) -> np.ndarray:
    if loss.target == "real":
        return rng.normal(size=(n, C))
    if loss.target == "binary":
        return rng.choice([-1.0, 1.0], size=(n, C))
    return np.eye(C)[rng.integers(0, C, n)]


def _rows(loss: Loss, seed: int = 0, n: int = 40):
    rng = np.random.default_rng(seed)
    C = 3
    F = 2.5 * rng.normal(size=(n, C))
    F[0] = 60.0                   # far from the origin: the stable forms must stay finite
    F[1] = -60.0
    return F, _targets(loss, rng, n, C)


def _scalar_points(loss: Loss, seed: int = 0):
    """Decision values and targets, away from the kinks (b z = 0 and b z = 1 for margins;
    r = z - b = 0 and |r| = param for real targets)."""
    rng = np.random.default_rng(seed)
    z = np.concatenate([np.linspace(-4.0, 4.0, 41) + 0.0123, 3.0 * rng.normal(size=60)])
    b = rng.normal(size=z.size) if loss.target == "real" else \
        rng.choice([-1.0, 1.0], size=z.size)
    if loss.target == "real":
        r = np.abs(z - b)
        keep = (r > 1e-3) & (np.abs(r - loss.param) > 1e-3)
    else:
        s = b * z
        keep = (np.abs(s) > 1e-3) & (np.abs(s - 1.0) > 1e-3)
    return z[keep], b[keep]


def _duals(loss: Loss, b: np.ndarray, rng) -> np.ndarray:
    """Dual values inside the conjugate's domain: convex combinations of the derivative at
    two random points (the domain is the closed convex hull of the derivative's range:
    ``b beta`` in ``[-1, 0]`` for the hinge, ``[-epsilon, epsilon]`` for huber ...)."""
    if loss.target == "real" and loss.name == "squared":
        return 2.0 * rng.normal(size=b.size)
    z1, z2 = (b + 4.0 * rng.normal(size=b.size) for _ in range(2))
    u = rng.uniform(0.0, 1.0, size=b.size)
    return u * loss.derivative(z1, b) + (1.0 - u) * loss.derivative(z2, b)


def _off_domain(loss: Loss, b: np.ndarray) -> np.ndarray:
    """Dual values off the conjugate's domain (where it is +inf), or inside R for the
    squared loss, whose domain is R."""
    return b * np.array([0.3, -1.4, 2.0, -7.0, 0.01]) if loss.target != "real" else \
        np.array([5.0, -5.0, 1.0 + loss.param, -1.0 - loss.param, 40.0])


# --------------------------------------------------------------------------------------
# assertion helpers (each takes a row; the mutant tests give them broken ones)
# --------------------------------------------------------------------------------------
def _call(kernel, name: str, loss: Loss, *args):
    try:
        return kernel(loss.loss_id, *args, loss.param)
    except ValidationError as err:
        raise AssertionError(f"loss {loss.name!r} (id {loss.loss_id}) has no branch in "
                             f"{name}: {err}") from err


def check_batch_dispatch(loss: Loss) -> None:
    """``loss_gradient`` and ``loss_grad_value`` of the id equal the row's twins."""
    F, Y = _rows(loss)
    sw = np.random.default_rng(1).uniform(0.2, 2.0, F.shape[0])
    out = np.empty_like(F)
    _call(loss_gradient, "loss_gradient", loss, F, Y, out)
    np.testing.assert_allclose(out, loss.gradient(F, Y), **TWIN)
    out = np.empty_like(F)
    total = _call(loss_grad_value, "loss_grad_value", loss, F, Y, sw, out)
    np.testing.assert_allclose(out, sw[:, None] * loss.gradient(F, Y), **TWIN)
    np.testing.assert_allclose(total, float(sw @ loss.value(F, Y)), **TWIN)


def check_scalar_dispatch(loss: Loss) -> None:
    """The four scalar kernels of the id equal the row's twins (value, derivative,
    conjugate inside and outside its domain, dual prox)."""
    rng = np.random.default_rng(2)
    z, b = _scalar_points(loss)
    got = [_call(loss_value, "loss_value", loss, zi, bi) for zi, bi in zip(z, b)]
    np.testing.assert_allclose(got, loss.pointwise(z, b), **TWIN)
    got = [_call(loss_derivative, "loss_derivative", loss, zi, bi) for zi, bi in zip(z, b)]
    np.testing.assert_allclose(got, loss.derivative(z, b), **TWIN)
    beta = _duals(loss, b, rng)
    beta[:5] = _off_domain(loss, b[:5])     # and some off the domain, where phi* is +inf
    got = np.array([_call(loss_conjugate, "loss_conjugate", loss, be, bi)
                    for be, bi in zip(beta, b)])
    want = loss.conjugate(beta, b)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], **TWIN)
    y = _duals(loss, b, rng)
    c = 3.0 * rng.normal(size=b.size)
    for sigma, n in STEPS:
        got = [_call(dual_prox, "dual_prox", loss, ci, yi, bi, sigma, n)
               for ci, yi, bi in zip(c, y, b)]
        np.testing.assert_allclose(got, loss.dual_prox(c, y, b, sigma, n), **TWIN)


def check_gradient_is_the_derivative(loss: Loss) -> None:
    """The twin's gradient against a central difference of the twin's value."""
    F, Y = _rows(loss, seed=3)
    F = F[2:]                                        # moderate values
    Y = Y[2:]
    if loss.target == "binary":                      # away from the kinks y u in {0, 1}
        s = Y * F
        F = np.where((np.abs(s) < 1e-2) | (np.abs(s - 1.0) < 1e-2), F + 0.05 * Y, F)
    if loss.target == "real":                        # away from the kinks r in {0, +-param}
        r = np.abs(F - Y)
        F = np.where((r < 1e-2) | (np.abs(r - loss.param) < 1e-2), F + 0.05, F)
    h = 1e-6
    num = np.empty_like(F)
    for c in range(F.shape[1]):
        E = np.zeros_like(F)
        E[:, c] = h
        num[:, c] = (loss.value(F + E, Y) - loss.value(F - E, Y)) / (2 * h)
    np.testing.assert_allclose(loss.gradient(F, Y), num, rtol=1e-6, atol=1e-7)
    if loss.scalar:
        z, b = _scalar_points(loss, seed=4)
        num = (loss.pointwise(z + h, b) - loss.pointwise(z - h, b)) / (2 * h)
        np.testing.assert_allclose(loss.derivative(z, b), num, rtol=1e-6, atol=1e-7)


def check_fenchel_young(loss: Loss) -> None:
    """``phi(z) + phi*(beta) = z beta`` at ``beta = phi'(z)``, and ``>`` elsewhere."""
    z, b = _scalar_points(loss, seed=5)
    beta = loss.derivative(z, b)
    lhs = loss.pointwise(z, b) + loss.conjugate(beta, b)
    np.testing.assert_allclose(lhs, z * beta, rtol=0, atol=1e-12 * (1 + np.abs(z * beta)).max())
    other = _duals(loss, b, np.random.default_rng(6))      # Fenchel-Young inequality
    gap = loss.pointwise(z, b) + loss.conjugate(other, b) - z * other
    assert (gap >= -1e-12).all()


def _prox_objective(loss, beta, c, y, b, sigma, n):
    with np.errstate(invalid="ignore"):
        return c * beta / n - loss.conjugate(beta, b) / n - (beta - y) ** 2 / (2 * sigma)


def check_prox_optimality(loss: Loss) -> None:
    """``dual_prox`` maximizes ``c beta / n - phi*(beta) / n - (beta - y)^2 / (2 sigma)``:
    no point of a fine grid over the domain, nor a small step either side, does better."""
    rng = np.random.default_rng(7)
    for sigma, n in STEPS:
        for _ in range(12):
            b = rng.normal() if loss.target == "real" else rng.choice([-1.0, 1.0])
            y = float(_duals(loss, np.array([b]), rng)[0])
            c = 3.0 * rng.normal()
            best = float(loss.dual_prox(c, y, b, sigma, n))
            h_best = _prox_objective(loss, best, c, y, b, sigma, n)
            assert np.isfinite(h_best), (loss.name, c, y, b, best)
            if loss.target == "real":
                grid = best + np.linspace(-5.0, 5.0, 4001)
            else:
                grid = b * np.linspace(-1.0, 0.0, 4001)
            grid = np.concatenate([grid, [best - 1e-6, best + 1e-6]])
            h_grid = _prox_objective(loss, grid, c, y, b, sigma, n)
            tol = 1e-10 * (1.0 + abs(h_best))
            assert h_best >= np.nanmax(h_grid) - tol, (loss.name, c, y, b, best)


def check_link(loss: Loss) -> None:
    """The link is the mean the loss is calibrated for: the expected derivative vanishes
    under the targets' distribution it gives (a point mass for the identity link)."""
    F = np.random.default_rng(8).normal(scale=2.0, size=(25, 3))
    if not loss.has_proba:
        np.testing.assert_array_equal(loss.link(F), F)
        with pytest.raises(ValidationError, match="does not model probabilities"):
            loss.predict_proba(F[:, :1])
        if loss.target == "real":
            # E l'(F, y) = 0 for y = link(F) -+ 1 with probabilities (p, 1 - p): the
            # quantile loss is calibrated for its level tau (p = tau), the others for the
            # centre of a symmetric law (p = 1/2)
            p = loss.param if loss.name == "quantile" else 0.5
            g = p * loss.gradient(F, loss.link(F) - 1.0) \
                + (1 - p) * loss.gradient(F, loss.link(F) + 1.0)
            np.testing.assert_allclose(g, 0.0, atol=1e-15)
        return
    if loss.target == "binary":                      # P(y = +1) = link(F), per column
        p = loss.link(F)
        g = p * loss.gradient(F, np.ones_like(F)) + (1 - p) * loss.gradient(F, -np.ones_like(F))
        np.testing.assert_allclose(g, 0.0, atol=1e-14)
        P = loss.predict_proba(F[:, :1])
        np.testing.assert_allclose(P, np.column_stack([1 - p[:, 0], p[:, 0]]), rtol=1e-15)
        return
    P = loss.link(F)                                 # classes: P(class k) = link(F)_k
    g = sum(P[:, [k]] * loss.gradient(F, np.tile(np.eye(3)[k], (len(F), 1)))
            for k in range(3))
    np.testing.assert_allclose(g, 0.0, atol=1e-14)
    np.testing.assert_allclose(loss.predict_proba(F), P, rtol=1e-15)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-15)


# --------------------------------------------------------------------------------------
# every row of the table
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_batch_dispatch_matches_the_twin(name):
    check_batch_dispatch(_case(name))


@pytest.mark.parametrize("name", CASES)
def test_scalar_dispatch_matches_the_twin_or_refuses(name):
    loss = _case(name)
    if loss.scalar:
        check_scalar_dispatch(loss)
        return
    for kname, kernel in SCALAR_KERNELS.items():   # no scalar form: every kernel refuses
        args = (0.5, 1.0) if kname != "dual_prox" else (0.5, 0.0, 1.0, 1.0, 1.0)
        with pytest.raises(ValidationError, match=r"unknown loss_id; valid ids are 0"):
            kernel(loss.loss_id, *args)
    with pytest.raises(ValidationError, match="has no scalar conjugate"):
        loss.conjugate(np.zeros(2), np.ones(2))


@pytest.mark.parametrize("name", TABLE)
def test_each_id_reaches_its_own_branch(name):
    """The twins of two rows differ on the sample points, so a kernel that sent this id to
    another row's branch would fail the dispatch tests above."""
    loss = get_loss(name)
    F, Y = _rows(loss)
    for other_name in TABLE:
        other = get_loss(other_name)
        if other is loss:
            continue
        assert not np.allclose(loss.gradient(F, Y), other.gradient(F, Y)), other_name
        if loss.scalar and other.scalar:
            z, b = _scalar_points(loss)
            beta = _duals(loss, b, np.random.default_rng(9))
            beta[:5] = _off_domain(loss, b[:5])      # off the domain too, where phi* is +inf
            assert not np.allclose(loss.pointwise(z, b), other.pointwise(z, b)), other_name
            with np.errstate(invalid="ignore"):
                assert not np.allclose(loss.conjugate(beta, b), other.conjugate(beta, b),
                                       equal_nan=True), other_name
            assert not np.allclose(loss.dual_prox(z, beta, b, 1.0, 3.0),
                                   other.dual_prox(z, beta, b, 1.0, 3.0)), other_name


@pytest.mark.parametrize("name", CASES)
def test_gradient_is_the_derivative_of_the_value(name):
    check_gradient_is_the_derivative(_case(name))


@pytest.mark.parametrize("name", [n for n in CASES if _case(n).scalar])
def test_conjugate_satisfies_fenchel_young(name):
    check_fenchel_young(_case(name))


@pytest.mark.parametrize("name", [n for n in CASES if _case(n).scalar])
def test_conjugate_prox_is_optimal(name):
    check_prox_optimality(_case(name))


@pytest.mark.parametrize("name", CASES)
def test_link_against_its_definition(name):
    check_link(_case(name))


@pytest.mark.parametrize("name", TABLE)
def test_row_properties_are_consistent(name):
    loss = get_loss(name)
    assert loss_by_id(loss.loss_id) is loss
    assert set(loss.families) <= {"dsg", "dspdc"} and loss.families
    assert loss.target == {"regression": "real"}.get(
        loss.task, "classes" if loss.multiclass == "joint" else "binary")
    if loss.smooth:
        assert loss.gamma == 1.0 / loss.curvature
    else:
        with pytest.raises(ValidationError, match="is not smooth"):
            loss.gamma
    if "dspdc" in loss.families:      # DSPDC needs a scalar, smooth loss (gamma > 0)
        assert loss.scalar and loss.smooth


def test_ids_are_one_space_and_unknown_ids_fail_loudly():
    ids = [get_loss(n).loss_id for n in TABLE]
    assert len(set(ids)) == len(ids)
    F = np.zeros((2, 2))
    for bad in (max(ids) + 1, -1):
        with pytest.raises(ValidationError, match=r"unknown loss_id; valid ids are 0"):
            loss_gradient(bad, F, F, np.empty_like(F))
        with pytest.raises(ValidationError, match=r"unknown loss_id; valid ids are 0"):
            loss_grad_value(bad, F, F, np.ones(2), np.empty_like(F))
        for kname, kernel in SCALAR_KERNELS.items():
            args = (0.5, 1.0) if kname != "dual_prox" else (0.5, 0.0, 1.0, 1.0, 1.0)
            with pytest.raises(ValidationError, match=r"unknown loss_id; valid ids are 0"):
                kernel(bad, *args)
        with pytest.raises(ValidationError, match=rf"unknown loss_id {bad}; valid ids are"):
            loss_by_id(bad)


def test_family_options_and_setup_rules_come_from_the_table():
    from ooc_kernels import DSGClassifier, DSGRegressor, DSPDCClassifier, DSPDCRegressor
    from ooc_kernels.families.dsg._schedule import CURVATURE
    from ooc_kernels.families.dspdc.params import LOSS_GAMMA, LOSSES

    def options(cls):
        return set(cls._parameter_constraints["loss"][0].options)

    assert options(DSGClassifier) | options(DSGRegressor) == set(losses_for("dsg"))
    assert options(DSPDCClassifier) | options(DSPDCRegressor) == set(losses_for("dspdc"))
    assert options(DSPDCRegressor) == {"squared"}
    assert options(DSGRegressor) == {"squared", "huber", "epsilon_insensitive", "quantile"}
    assert options(DSGClassifier) == {"hinge", "logistic", "softmax", "squared_hinge"}
    assert CURVATURE == {"squared": 1.0, "hinge": 1.0, "logistic": 0.25, "softmax": 0.5,
                         "squared_hinge": 1.0, "huber": 1.0, "epsilon_insensitive": 1.0,
                         "quantile": 1.0}
    assert LOSS_GAMMA == {"squared": 1.0, "logistic": 4.0, "smoothed_hinge": 1.0}
    assert LOSSES == {n: get_loss(n).loss_id for n in ("squared", "logistic",
                                                        "smoothed_hinge")}
    for cls in (DSGClassifier, DSPDCClassifier):
        assert set(cls._proba_losses) == {n for n in options(cls) if get_loss(n).has_proba}
        assert '"logistic"' in cls.__doc__.split("loss : {")[1].split("}")[0]


# --------------------------------------------------------------------------------------
# mutants: the helpers fail on broken rows
# --------------------------------------------------------------------------------------
def _mutant(name: str, index: int, fn) -> Loss:
    loss = _case(name)
    twins = list(loss._pointwise)
    twins[index] = fn
    kw = {"_pointwise": tuple(twins)}
    extra = () if loss.parameter is None else (loss.param,)
    if index <= 1:                   # value and derivative also feed the rows' functions
        kw["_value"] = lambda F, Y, p: twins[0](F, Y, *extra).sum(axis=1)
        kw["_gradient"] = lambda F, Y, p: twins[1](F, Y, *extra)
    return dataclasses.replace(loss, **kw)


#: What a failed check says: NumPy's comparison, or a plain assert.
BROKEN = r"Not equal to tolerance|Arrays are not equal|assert"

MUTANTS = {
    "logistic derivative off by 1%": (
        _mutant("logistic", 1, lambda z, b: 1.01 * tw.logistic_derivative(z, b)),
        [check_batch_dispatch, check_scalar_dispatch, check_gradient_is_the_derivative,
         check_fenchel_young]),
    "smoothed hinge derivative of the hinge": (
        _mutant("smoothed_hinge", 1, tw.hinge_derivative),
        [check_batch_dispatch, check_gradient_is_the_derivative, check_fenchel_young]),
    "smoothed hinge conjugate without the quadratic": (
        _mutant("smoothed_hinge", 2, tw.hinge_conjugate),
        [check_scalar_dispatch, check_fenchel_young]),
    "squared conjugate with the wrong sign": (
        _mutant("squared", 2, lambda beta, b: 0.5 * np.asarray(beta) ** 2 - b * beta),
        [check_scalar_dispatch, check_fenchel_young]),
    "logistic prox stopped at the current dual": (
        _mutant("logistic", 3, lambda c, y, b, sigma, n: np.clip(
            np.asarray(y, dtype=float) * 0.5 + 0.0 * np.asarray(c), -1.0, 1.0)),
        [check_scalar_dispatch, check_prox_optimality]),
    "smoothed hinge prox not clipped": (
        _mutant("smoothed_hinge", 3, tw.squared_dual_prox),
        [check_scalar_dispatch, check_prox_optimality]),
    "squared hinge derivative of the smoothed hinge": (
        _mutant("squared_hinge", 1, tw.smoothed_hinge_derivative),
        [check_batch_dispatch, check_gradient_is_the_derivative, check_fenchel_young]),
    "squared hinge conjugate on the hinge's domain": (
        _mutant("squared_hinge", 2, tw.smoothed_hinge_conjugate),
        [check_scalar_dispatch]),
    "huber derivative not clipped (the squared loss's)": (
        _mutant("huber", 1, lambda z, b, p: tw.squared_derivative(z, b)),
        [check_batch_dispatch, check_scalar_dispatch, check_gradient_is_the_derivative,
         check_fenchel_young]),
    "huber prox not clipped": (
        _mutant("huber", 3, lambda c, y, b, sigma, n, p: tw.squared_dual_prox(c, y, b, sigma,
                                                                              n)),
        [check_scalar_dispatch, check_prox_optimality]),
    "epsilon-insensitive derivative ignoring the tube": (
        _mutant("epsilon_insensitive", 1, lambda z, b, p: np.sign(np.asarray(z) - b)),
        [check_batch_dispatch, check_scalar_dispatch, check_gradient_is_the_derivative,
         check_fenchel_young]),
    "epsilon-insensitive conjugate without epsilon": (
        _mutant("epsilon_insensitive", 2,
                lambda beta, b, p: tw.epsilon_insensitive_conjugate(beta, b, 0.0)),
        [check_scalar_dispatch, check_fenchel_young]),
    "epsilon-insensitive prox not soft-thresholded": (
        _mutant("epsilon_insensitive", 3,
                lambda c, y, b, sigma, n, p: tw.epsilon_insensitive_dual_prox(
                    c, y, b, sigma, n, 0.0)),
        [check_scalar_dispatch, check_prox_optimality]),
    "quantile derivative with tau and 1 - tau swapped": (
        _mutant("quantile[0.9]", 1, lambda z, b, p: tw.quantile_derivative(z, b, 1.0 - p)),
        [check_gradient_is_the_derivative, check_fenchel_young]),
    "quantile prox clipped to [-1, 1]": (
        _mutant("quantile", 3, lambda c, y, b, sigma, n, p: np.clip(
            np.asarray(y) + sigma * (np.asarray(c) - b) / n, -1.0, 1.0)),
        [check_scalar_dispatch, check_prox_optimality]),
}


@pytest.mark.parametrize("case", list(MUTANTS))
def test_the_checks_catch_a_broken_row(case):
    row, checks = MUTANTS[case]
    for check in checks:
        with pytest.raises(AssertionError, match=BROKEN):
            check(row)


def test_the_link_check_catches_a_broken_link():
    broken = dataclasses.replace(get_loss("logistic"),
                                 _link=lambda F: tw.logistic_mean(1.1 * F))
    with pytest.raises(AssertionError, match=BROKEN):
        check_link(broken)
    broken = dataclasses.replace(get_loss("softmax"), _link=lambda F: tw.softmax(F[:, ::-1]))
    with pytest.raises(AssertionError, match=BROKEN):
        check_link(broken)
    broken = dataclasses.replace(get_loss("quantile").with_param(0.9),   # the median's link
                                 _link=lambda F: np.asarray(F) + 0.5)
    with pytest.raises(AssertionError, match=BROKEN):
        check_link(broken)


def test_an_id_in_the_table_without_a_numba_branch_is_detected():
    """A row whose id no kernel branch serves: every dispatch check fails on it, naming the
    loss and the kernel."""
    squared = get_loss("squared")
    orphan = dataclasses.replace(squared, name="orphan", loss_id=max(
        get_loss(n).loss_id for n in TABLE) + 1)
    with pytest.raises(AssertionError, match=r"loss 'orphan' \(id \d+\) has no branch in "
                                             r"loss_gradient"):
        check_batch_dispatch(orphan)
    with pytest.raises(AssertionError, match=r"loss 'orphan' \(id \d+\) has no branch in "
                                             r"loss_value"):
        check_scalar_dispatch(orphan)

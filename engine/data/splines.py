"""Spline bases for a continuous covariate: R's natural cubic spline ``ns`` and Harrell's
restricted cubic spline ``rcs``, as formulaic stateful transforms.

Both are evaluated once on the fitting data, where they learn their knots (kept in the
transform's state), and again on new data with the same knots, so a prediction rebuilds the same
columns.  New data outside the fitted range (the data's range, widened to boundary knots or
knots given explicitly) raises: a spline's shape there is an extrapolation that the data never
supported.

- ``ns(x, df=None, knots=None, boundary_knots=None)``: the B-spline basis of a natural cubic
  spline, column for column R's ``splines::ns`` (Hastie 1992, Statistical Models in S, ch. 7):
  interior knots at quantiles of x, the natural boundary conditions (second derivative zero at
  the boundary knots) imposed by projecting the cubic B-spline basis on the null space of the
  constraints with the same Householder QR as R.
- ``rcs(x, nk=5, knots=None)``: Stone & Koo's restricted cubic spline in Harrell's
  truncated-power form, as ``rms::rcs`` / ``Hmisc::rcspline.eval(inclx=TRUE)``: the linear term x
  and nk - 2 non-linear terms, each divided by (t_k - t_1)^2 so it is in the units of x; knots at
  Harrell's quantiles (Harrell 2015, Regression Modeling Strategies, 2nd ed., section 2.4.6).
"""
import numpy as np
import scipy.interpolate as si
from formulaic.materializers.types import FactorValues
from formulaic.utils.stateful_transforms import stateful_transform

from ..core.errors import CohortError

#: Harrell's default knot quantiles for 3..7 knots (rms::rcs, Hmisc::rcspline.eval).
HARRELL_OUTER = {3: 0.10, 4: 0.05, 5: 0.05, 6: 0.05, 7: 0.025}
SHOWN = 5


def _finite(x, term):
    """x as float64; NaN stays (formulaic's NA handling drops those rows), inf refused."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise CohortError(f"{term}: needs one numeric column, got shape {x.shape}.")
    bad = np.isinf(x)
    if bad.any():
        rows = np.flatnonzero(bad)[:SHOWN] + 1
        raise CohortError(f"{term}: infinite values at rows {rows.tolist()} (1-based). Replace "
                          "them by numbers or drop those rows.")
    return x


def _check_range(x, lo, hi, term, fix):
    """Refuse new data outside [lo, hi], the range the spline was fitted on."""
    outside = (x < lo) | (x > hi)
    if outside.any():
        rows = np.flatnonzero(outside)[:SHOWN]
        shown = ", ".join(f"row {r + 1}: {x[r]:g}" for r in rows)
        raise CohortError(
            f"{term}: {int(outside.sum())} value(s) outside the range the spline was fitted on, "
            f"[{lo:g}, {hi:g}] ({shown}); there the curve would extrapolate (linearly) beyond "
            f"anything the data supported. {fix}")


def r_quantile(x, probs):
    """R's default (type 7) sample quantiles of the non-missing x."""
    return np.quantile(x[~np.isnan(x)], probs, method="linear")


def ns_knots(x, df):
    """Interior knots of ``ns(x, df)`` without intercept: df - 1 knots at equally spaced
    quantiles of x, as R's ns."""
    n_inner = df - 1
    if n_inner <= 0:
        return np.empty(0)
    return r_quantile(x, np.linspace(0.0, 1.0, n_inner + 2)[1:-1])


def ns_basis(x, knots, boundary_knots):
    """The natural cubic spline basis of R's ``ns(x, knots=, Boundary.knots=)`` (no intercept).

    Returns ndarray (n, len(knots) + 1); NaN rows stay NaN.  Values beyond the boundary knots
    continue linearly, as in R.
    """
    lo, hi = boundary_knots
    t = np.sort(np.concatenate([[lo] * 4, knots, [hi] * 4]))
    n_basis = len(t) - 4
    spline = si.BSpline(t, np.eye(n_basis), 3, extrapolate=False)
    const = spline.derivative(2)(np.array([lo, hi]))          # (2, n_basis)
    q, _ = np.linalg.qr(const[:, 1:].T, mode="complete")      # R: qr(t(const)), intercept dropped
    project = np.vstack([np.zeros(n_basis - 3), q[:, 2:]])    # B-spline basis -> ns basis
    out = np.full((len(x), n_basis - 3), np.nan)
    ok = ~np.isnan(x)
    inside = ok & (x >= lo) & (x <= hi)
    if inside.any():   # 4 non-zero B-splines per row: a sparse product, never n x n_basis dense
        out[inside] = si.BSpline.design_matrix(x[inside], t, 3) @ project
    for pivot, side in ((lo, ok & (x < lo)), (hi, ok & (x > hi))):
        if side.any():   # linear continuation: value + slope at the boundary knot
            value = spline(pivot) @ project
            slope = spline.derivative(1)(pivot) @ project
            out[side] = value + (x[side] - pivot)[:, None] * slope
    return out


def harrell_knots(x, nk):
    """Knots of ``rms::rcs(x, nk)``: quantiles of x at Harrell's levels, the outer two at the
    5th smallest and 5th largest value when fewer than 100 values (Hmisc::rcspline.eval, without
    its fallbacks for heavily tied data: those raise instead)."""
    x = np.sort(x[~np.isnan(x)])
    if nk not in HARRELL_OUTER:
        raise CohortError(f"rcs: nk={nk}; Harrell's default knots exist for 3 to 7 knots. Pass "
                          "nk between 3 and 7, or knots=[...] explicitly.")
    if len(x) < 6 or len(np.unique(x)) - 2 <= nk:
        raise CohortError(f"rcs: {len(np.unique(x))} distinct values are too few for {nk} "
                          "knots. Use fewer knots (nk=3), or a categorical term C(x).")
    outer = HARRELL_OUTER[nk]
    knots = r_quantile(x, np.linspace(outer, 1.0 - outer, nk))
    if len(x) < 100:
        knots[0], knots[-1] = x[4], x[-5]
    if len(np.unique(knots)) < nk:
        raise CohortError(f"rcs: the {nk} knots {knots.tolist()} are not distinct (heavily "
                          "tied values). Use fewer knots, or pass knots=[...] explicitly.")
    return knots


def rcs_basis(x, knots):
    """Harrell's restricted cubic spline basis: x, then for j = 1..k-2
    [(x-t_j)+^3 - (x-t_{k-1})+^3 (t_k-t_j)/(t_k-t_{k-1}) + (x-t_k)+^3 (t_{k-1}-t_j)/(t_k-t_{k-1})]
    / (t_k - t_1)^2; returns ndarray (n, k - 1)."""
    t = np.asarray(knots, dtype=np.float64)
    k = len(t)
    scale = (t[-1] - t[0]) ** (2.0 / 3.0)

    def cube(knot):
        return np.maximum((x - knot) / scale, 0.0) ** 3

    last, next_last = cube(t[-1]), cube(t[-2])
    gap = t[-1] - t[-2]
    columns = [x] + [cube(t[j]) + ((t[-2] - t[j]) * last - (t[-1] - t[j]) * next_last) / gap
                     for j in range(k - 2)]
    return np.column_stack(columns)


@stateful_transform
def ns(x, df=None, knots=None, boundary_knots=None, _state={}):  # noqa: B006 (formulaic's state)
    """R's ``splines::ns`` as a formula term: ``ns(bmi, df=4)``; knots learnt on the fitting
    data and reused for new data."""
    term = "ns"
    x = _finite(x, term)
    if "knots" not in _state:
        if knots is None and df is None:
            raise CohortError("ns(x): give df= (e.g. ns(bmi, df=4)) or knots=[...].")
        if knots is None and (int(df) != df or df < 1):
            raise CohortError(f"ns(x, df={df}): df must be a whole number >= 1.")
        ok = x[~np.isnan(x)]
        bk = (np.sort(np.asarray(boundary_knots, float)) if boundary_knots is not None
              else np.array([ok.min(), ok.max()]))
        if knots is None and not ((ok >= bk[0]) & (ok <= bk[1])).any():
            raise CohortError(f"ns: no value of x lies within boundary_knots "
                              f"({bk[0]:g}, {bk[-1]:g}), so there are no quantiles to place "
                              f"df={df}'s knots at. Choose boundary knots that span the data.")
        inner = ns_knots(ok[(ok >= bk[0]) & (ok <= bk[1])], int(df)) if knots is None \
            else np.sort(np.asarray(knots, float))
        _check_ns_knots(ok, inner, bk, df)
        _state.update(knots=inner.tolist(), boundary_knots=bk.tolist(),
                      range=[float(min(ok.min(), bk[0])), float(max(ok.max(), bk[1]))])
    else:
        lo, hi = _state["range"]
        _check_range(x, lo, hi, term,
                     "Restrict newdata to that range, or refit with ns(x, df=..., "
                     "boundary_knots=(low, high)) spanning the values to predict at.")
    basis = ns_basis(x, np.asarray(_state["knots"]), _state["boundary_knots"])
    return FactorValues(basis, column_names=tuple(str(j + 1) for j in range(basis.shape[1])))


def _check_ns_knots(x, inner, boundary, df):
    """The knots of ns must be distinct and lie strictly between the boundary knots (else the
    basis is not defined: scipy's 'repeated knots')."""
    knots = np.concatenate(([boundary[0]], inner, [boundary[-1]]))
    if np.all(np.diff(knots) > 0):
        return
    if df is not None and inner.size == int(df) - 1:
        raise CohortError(f"ns(x, df={df}): {np.unique(x).size} distinct value(s) are too few "
                          f"for df={df}: its knots {_shown(knots)} (the boundary ones and "
                          "equally spaced quantiles) coincide. Use a smaller df, or C(x) for a "
                          "column of few values.")
    raise CohortError(f"ns: the knots {_shown(inner)} must be distinct and lie strictly "
                      f"inside the boundary knots {_shown(boundary)}. Choose knots "
                      "within the range of the data (or widen boundary_knots=).")


def _shown(values):
    return "[" + ", ".join(f"{v:g}" for v in np.asarray(values, float)) + "]"


@stateful_transform
def rcs(x, nk=5, knots=None, _state={}):  # noqa: B006 (formulaic's state)
    """Harrell's restricted cubic spline as a formula term: ``rcs(age, 4)`` (4 knots at
    Harrell's quantiles) or ``rcs(age, knots=[40, 50, 60, 70])``; columns x, x', x'', ..."""
    term = "rcs"
    x = _finite(x, term)
    if "knots" not in _state:
        ok = x[~np.isnan(x)]
        chosen = harrell_knots(ok, int(nk)) if knots is None \
            else np.sort(np.asarray(knots, float))
        if len(chosen) < 3:
            raise CohortError(f"rcs: {len(chosen)} knots given; a restricted cubic spline "
                              "needs at least 3.")
        _state.update(knots=chosen.tolist(), range=[float(min(ok.min(), chosen[0])),
                                                     float(max(ok.max(), chosen[-1]))])
    else:
        lo, hi = _state["range"]
        _check_range(x, lo, hi, term, "Restrict newdata to that range, or refit on data "
                                      "spanning the values to predict at.")
    basis = rcs_basis(x, _state["knots"])
    return FactorValues(basis, column_names=tuple("x" + "'" * j
                                                  for j in range(basis.shape[1])))

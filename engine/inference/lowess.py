"""R's lowess: Cleveland's locally weighted linear smoother with robustness iterations
(Cleveland 1979, "Robust locally weighted regression and smoothing scatterplots", JASA
74:829-836), as R's ``lowess`` computes it (its C routine clowess).

Written here rather than taken from statsmodels because epidemiological covariates are full of
ties (ages in years, counts, 0/1 and mostly-zero columns), where the two differ: where every
neighbour of a point has the same x, Cleveland's fit falls back to a weighted mean, and
statsmodels' (0.14) to a line through the origin (rossi's age: 0.005 apart; a 0/1 covariate:
the smooth at 0 was -0.50 against R's -0.02).  At 10^6 rows the local fits are few (points
within ``delta`` of a fitted one are interpolated, ties copied), each O(span).  Which points
take a fit depends on x alone, so they are found once and each pass's fits run side by side
where a core is idle (engine.core.numba_layer), the same numbers as one after another: at
10^6 rows 2.0 -> 1.2-1.3 s on the 2-core Intel Xeon (statsmodels 1.8-2.6 s).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..core import numba_layer

# the parallel fits run in this many blocks (fixed: the same numbers on any thread count)
_BLOCKS = 16


def lowess(x, y, frac: float = 2 / 3, iterations: int = 3, delta: float | None = None):
    """The lowess smooth of y against x at each x, in the caller's order (R's
    ``lowess(x, y, f = frac, iter = iterations, delta = delta)$y`` in x's order).  ``delta``
    defaults to R's 1% of x's range."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    order = np.argsort(x, kind="stable")      # R's order(): ties keep their order
    xs, ys = x[order], y[order]
    if delta is None:
        delta = 0.01 * float(xs[-1] - xs[0]) if xs.size else 0.0
    smooth = np.empty_like(ys)
    if xs.size < 2:
        smooth[:] = ys
    else:
        points = _fit_points(xs, max(2, min(xs.size, int(frac * xs.size + 1e-7))), float(delta))
        fits = _fits_parallel if numba_layer.parallel_ok(points[0].size * xs.size) else _fits
        _clowess(xs, ys, int(iterations), points, fits, smooth)
    out = np.empty_like(smooth)
    out[order] = smooth
    return out


def _clowess(x, y, nsteps, points, fits, ys):
    """ys: the smooth of y at the sorted x (Cleveland's algorithm with R's constants): the
    local fits at ``points`` (by ``fits``), the points between filled in, then the robustness
    weights for the next pass."""
    n = x.size
    rw = np.ones(n)
    for step in range(nsteps + 1):
        fitted = fits(x, y, points[0], points[1], points[2], step > 0, rw)
        _fill_in(x, y, points[0], fitted, ys)
        if step == nsteps or not _robustness_weights(y - ys, rw):
            break


@njit(cache=True, nogil=True)
def _fit_points(x, ns, delta):
    """(i, nleft, nright): the points of R's clowess that take a local fit, in order, with
    their windows of ns neighbours (they depend on x alone, so every pass shares them; the
    points within delta of a fitted one are interpolated, ties copied: see _fill_in)."""
    n = x.size
    at, left, right = [], [], []
    nleft, nright, last, i = 0, ns - 1, -1, 0
    while True:
        if nright < n - 1:
            # move the window right while that does not widen it
            if x[i] - x[nleft] > x[nright + 1] - x[i]:
                nleft += 1
                nright += 1
                continue
        at.append(i)
        left.append(nleft)
        right.append(nright)
        last = i
        cut = x[last] + delta
        i = last + 1
        while i < n:
            if x[i] > cut:
                break
            if x[i] == x[last]:
                last = i
            i += 1
        i = max(last + 1, i - 1)
        if last >= n - 1:
            break
    return np.array(at), np.array(left), np.array(right)


@njit(cache=True, nogil=True)
def _fill_in(x, y, at, fitted, ys):
    """ys at every point: the fitted value at each of ``at`` (y where the fit had no weight),
    ties of a point copying its value, the points skipped between two within delta linearly
    interpolated (R's clowess walk, replayed over the fits in order)."""
    n = x.size
    last = -1
    for k in range(at.size):
        i = at[k]
        ys[i] = fitted[k] if np.isfinite(fitted[k]) else y[i]
        if last < i - 1:        # the points skipped within delta: interpolated
            denom = x[i] - x[last]
            for j in range(last + 1, i):
                alpha = (x[j] - x[last]) / denom
                ys[j] = alpha * ys[i] + (1.0 - alpha) * ys[last]
        last = i
        stop = at[k + 1] if k + 1 < at.size else n
        for j in range(i + 1, stop):
            if x[j] == x[last]:     # ties take the fitted value
                ys[j] = ys[last]
                last = j


@njit(cache=True, nogil=True)
def _fits(x, y, at, left, right, userw, rw):
    """The local fit at each of ``at`` (NaN where no weight was positive), one after another
    in one scratch array of weights."""
    w = np.zeros(x.size)
    out = np.empty(at.size)
    for k in range(at.size):
        out[k] = _lowest(x, y, x[at[k]], left[k], right[k], w, userw, rw)
    return out


@njit(cache=True, nogil=True, parallel=True)
def _fits_parallel(x, y, at, left, right, userw, rw):
    """_fits with the fits in _BLOCKS runs side by side, a scratch array each: the same
    numbers (each fit reads only its own window's weights)."""
    out = np.empty(at.size)
    bounds = np.linspace(0, at.size, _BLOCKS + 1).astype(np.int64)
    for b in prange(_BLOCKS):
        w = np.zeros(x.size)
        for k in range(bounds[b], bounds[b + 1]):
            out[k] = _lowest(x, y, x[at[k]], left[k], right[k], w, userw, rw)
    return out


@njit(cache=True, nogil=True)
def _robustness_weights(res, rw):
    """Cleveland's bisquare weights of the residuals, with R's 6 x the median absolute
    residual; False (and rw unchanged) where the fit is effectively perfect."""
    n = res.size
    a = np.abs(res)
    sc = 0.0
    for k in range(n):
        sc += a[k]
    sc /= n
    m1 = n // 2
    if n % 2 == 0:                  # 6 x the median absolute residual
        part = np.partition(a, (m1 - 1, m1))
        cmad = 3.0 * (part[m1] + part[m1 - 1])
    else:
        cmad = 6.0 * np.partition(a, m1)[m1]
    if cmad < 1e-7 * sc:            # effectively a perfect fit
        return False
    c9, c1 = 0.999 * cmad, 0.001 * cmad
    for k in range(n):              # bisquare robustness weights
        r = a[k]
        if r <= c1:
            rw[k] = 1.0
        elif r <= c9:
            u = r / cmad
            rw[k] = (1.0 - u * u) ** 2
        else:
            rw[k] = 0.0
    return True


@njit(cache=True, nogil=True, inline="always")
def _lowest(x, y, xs, nleft, nright, w, userw, rw):
    """The local weighted linear fit at xs over the window nleft..nright (and the ties beyond
    it), NaN where no weight was positive: tricube weights of the distance scaled by the
    window's radius, times the robustness weights after the first pass; the slope left out
    where the window's x barely spread."""
    n = x.size
    span = x[n - 1] - x[0]
    h = max(xs - x[nleft], x[nright] - xs)
    h9, h1 = 0.999 * h, 0.001 * h
    a = 0.0
    j = nleft
    while j < n:
        w[j] = 0.0
        r = abs(x[j] - xs)
        if r <= h9:
            if r <= h1:
                w[j] = 1.0
            else:
                q = r / h
                q = 1.0 - q * q * q
                w[j] = q * q * q
            if userw:
                w[j] *= rw[j]
            a += w[j]
        elif x[j] > xs:
            break
        j += 1
    nrt = j - 1
    if a <= 0.0:
        return np.nan
    for j in range(nleft, nrt + 1):
        w[j] /= a
    if h > 0.0:
        a = 0.0
        for j in range(nleft, nrt + 1):
            a += w[j] * x[j]
        b = xs - a
        c = 0.0
        for j in range(nleft, nrt + 1):
            c += w[j] * (x[j] - a) * (x[j] - a)
        if np.sqrt(c) > 0.001 * span:
            b /= c
            for j in range(nleft, nrt + 1):
                w[j] *= b * (x[j] - a) + 1.0
    a = 0.0
    for j in range(nleft, nrt + 1):
        a += w[j] * y[j]
    return a

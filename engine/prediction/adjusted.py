"""Covariate-adjusted survival curves of a Cox fit by direct standardisation (the g-formula):
for each level a of the treatment, the average over the cohort's rows of each row's predicted
curve with its treatment set to a,

    theta_a(t) = sum_i w_i exp(-r_i(a) H0_{s_i}(t)) / sum_i w_i,  r_i(a) = exp((x_i(a) - c) beta)

(Makuch 1982; Chang, Gelber & Gail 1982; R's adjustedCurves "direct" method), their difference
and ratio between levels at chosen times, and the adjusted restricted mean survival time
RMST_a(tau) = int_0^tau theta_a(t) dt.

Standard errors by the delta method.  theta depends on beta and on the Breslow/Efron increments
of H0: with A_s(t) = sum_{i in s} w_i r_i S_i(t) / W and
B(t) = sum_i w_i r_i S_i(t) x_i(a) H0(t) / W,

    Var theta = g' V g + sum_s A_s(t)^2 sum_{t_k <= t} dV_k + sum_i w_i^2 (S_i(t) - theta)^2 / W^2,
    g = B(t) - sum_s A_s(t) Q_s(t),

the first two terms Tsiatis' variance of the curves (engine.regression.baseline: Q and dV), the
third the sampling variance of the standardisation over the cohort's rows (their covariance is
left out, as in Sjolander's stdReg for Cox models it is small).  A difference and an RMST are
linear in the curves and take the same three terms with their combined weights; a ratio's is
that of the log curves.  The point estimates cost O(N T) over the fit's sorted rows (no new
risk-set sums); the standard errors add one pass over the rows for every level at once
(engine.prediction.standardised_sums: O(N T + nnz T)) and Q's sums (one sparse product over
the gaps between the times: engine.regression.baseline).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit
from scipy import stats

from ..core.errors import CohortError, DataWarning
from ..regression.problem import Problem
from ..regression.drivers.resampling import bootstrap_counts, subjects
from ..regression.baseline import baseline
from ..regression.fine_gray_cif import check_fine_gray, subdistribution_hazard
from ..regression.predict import checked_times, cox_baseline, covariance
from .standardised_sums import level_sums


@dataclass
class AdjustedCurves:
    """What ``engine.adjusted_curves`` returns.

    curves : level, time, survival (Fine-Gray: cif), se, lower, upper (limits on the
        log(-log) scale)
    contrasts : level, reference (the first level), time, difference (level minus reference),
        se, lower, upper, ratio, ratio_lower, ratio_upper (limits of the log ratio)
    rmst : level (or the difference), tau, rmst, se, lower, upper; when asked
    treatment : the covariate; levels : the levels compared (the first is the reference)
    """

    curves: pd.DataFrame
    contrasts: pd.DataFrame
    rmst: pd.DataFrame | None
    treatment: str
    levels: list


def adjusted_curves(res, treatment: str, times, levels=None, rmst_tau=None, se: bool = True,
                    level: float = 0.95, bootstrap: int = 0, seed: int = 0) -> AdjustedCurves:
    """Adjusted survival curves of the Cox fit ``res`` by treatment (see the module).

    treatment : a covariate of the fit: a numeric column (``levels`` default: its two values
        when it has two, say sex coded 1/2, else 0 and 1) or a
        text column one-hot encoded as ``treatment[level]`` (default: all its levels, the
        reference first)
    times : increasing times to report (within every stratum's follow-up; later ones NaN)
    rmst_tau : also report the adjusted restricted mean survival time up to tau, per level and
        as differences from the first level (exact: the curves at every event time before tau,
        O(N x those times))
    se : False skips the standard errors (the point estimates alone, O(N T))
    bootstrap : B > 0 adds percentile limits at ``level`` from B replicates (boot_lower,
        boot_upper): subjects redrawn (engine.resampling, ``seed``), the model refitted from
        the fit's coefficients on the same sorted rows, the baseline and the standardisation
        recomputed with the drawn counts as weights; for Cox and Fine-Gray fits

    A Fine-Gray fit gives adjusted cumulative incidence curves (the average of predict_cif's
    curves; columns cif instead of survival) and their differences and ratios, without
    standard errors (NaN: no delta method for the subdistribution baseline here; bootstrap=
    gives percentile limits).
    """
    if not (isinstance(bootstrap, (int, np.integer)) and bootstrap >= 0):
        raise ValueError(f"bootstrap must be a number of replicates (0 for none), got "
                         f"{bootstrap!r}")
    if res.spec.get("model") == "fine_gray":
        return _adjusted_cif(res, treatment, times, levels, rmst_tau, level, bootstrap, seed)
    b = cox_baseline(res)
    cohort = res.problem.cohort
    if cohort.start is not None:
        raise CohortError("adjusted curves average over one row per subject; this cohort has "
                          "entry times (episodes). Fit a cohort of one row per subject.")
    times = checked_times(times, increasing=True)
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    columns, settings, names = treatment_columns(cohort, treatment, levels)
    strata = (np.zeros(cohort.n, np.int64) if cohort.strata is None
              else np.asarray(cohort.strata, np.int64))
    if (times[None, :] > b.last[np.unique(strata), None]).any():
        warnings.warn(f"times after the last follow-up of a stratum ({b.last.min():g}) give "
                      "NaN: the baseline hazard is not estimated there.", DataWarning,
                      stacklevel=2)
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    w = w / w.sum()
    keep, V = covariance(res) if se else (None, None)
    lp_rest = (np.asarray(cohort.X @ b.beta).ravel()
               - np.asarray(cohort.X[:, columns] @ b.beta[columns]).ravel() - b.offset)
    grid = times if rmst_tau is None else _rmst_grid(b, strata, times, rmst_tau)
    K = len(b.times)
    H0 = np.vstack([b.cumulative(b.hazard, s, grid) for s in range(K)])
    H0[grid[None, :] > b.last[:, None]] = np.nan
    risks = [np.exp(lp_rest + setting @ b.beta[columns]) for setting in settings]
    parts = None
    if V is None:
        est = [{"r": r, "theta": averaged_curve(r, w, strata, H0)} for r in risks]
    else:
        sums = level_sums(cohort.X, w, strata, H0, np.vstack(risks), columns, settings)
        cumV = np.vstack([b.cumulative(b.varhaz, s, grid) for s in range(K)])
        Q = [b.q_sums(s, grid)[:, keep] for s in range(K)]
        est = [{"r": r, "theta": sums.theta[l], "A": sums.A[l], "M1": sums.M1[l],
                "M2": sums.M2[l], "cross": sums.cross[l],
                "g": sums.B[l][:, keep] - sum(sums.A[l][s][:, None] * Q[s] for s in range(K))}
               for l, r in enumerate(risks)]
        parts = {"V": V, "cumV": cumV, "w_sq": float(w @ w)}
    z = stats.norm.ppf(0.5 + level / 2)
    at = np.searchsorted(grid, times)
    curves = []
    for name, e in zip(names, est):
        var = _pointwise_variance([(1.0, e)], parts)
        curves.append(_log_log_limits(pd.DataFrame({
            "level": name, "time": times, "survival": e["theta"][at],
            "se": np.sqrt(var[at])}), z))
    contrasts = []
    ref = est[0]
    for name, e in zip(names[1:], est[1:]):
        cross = e["cross"] if parts else None
        diff = e["theta"] - ref["theta"]
        ratio = e["theta"] / ref["theta"]
        var = _pointwise_variance([(1.0, e), (-1.0, ref)], parts, cross)
        c1, c0 = 1.0 / e["theta"], -1.0 / ref["theta"]
        var_log = _pointwise_variance([(c1, e), (c0, ref)], parts, cross)
        se_d, se_l = np.sqrt(var[at]), np.sqrt(var_log[at])
        contrasts.append(pd.DataFrame({
            "level": name, "reference": names[0], "time": times, "difference": diff[at],
            "se": se_d, "lower": diff[at] - z * se_d, "upper": diff[at] + z * se_d,
            "ratio": ratio[at], "ratio_lower": ratio[at] * np.exp(-z * se_l),
            "ratio_upper": ratio[at] * np.exp(z * se_l)}))
    rmst = None
    if rmst_tau is not None:
        rmst = _rmst(grid, names, est, parts, w, strata, H0, z, float(rmst_tau))
    out = AdjustedCurves(curves=pd.concat(curves, ignore_index=True),
                         contrasts=(pd.concat(contrasts, ignore_index=True) if contrasts
                                    else pd.DataFrame()),
                         rmst=rmst, treatment=treatment, levels=names)
    if bootstrap:
        reps = _replicates(res, columns, settings, grid, strata, bootstrap, seed)
        _add_percentiles(out, reps[:, :, at], level)
        if rmst is not None:
            tau = float(rmst_tau)
            width = np.where(grid < tau, np.minimum(np.append(grid[1:], tau), tau) - grid, 0.0)
            per_level = reps @ width                                     # (B, levels)
            _add_rmst_percentiles(rmst, per_level, level)
    return out


def _adjusted_cif(res, treatment, times, levels, rmst_tau, level, bootstrap,
                  seed) -> AdjustedCurves:
    """The g-formula for a Fine-Gray fit: average predicted cumulative incidence by level."""
    check_fine_gray(res)
    if rmst_tau is not None:
        raise ValueError("rmst_tau is for Cox fits (survival curves); a Fine-Gray fit's "
                         "adjusted curves are cumulative incidences.")
    cohort = res.problem.cohort
    times = checked_times(times, increasing=True)
    event_times, jumps, last = subdistribution_hazard(res)
    columns, settings, names = treatment_columns(cohort, treatment, levels)
    strata = (np.zeros(cohort.n, np.int64) if cohort.strata is None
              else np.asarray(cohort.strata, np.int64))
    L0 = np.vstack([np.concatenate(([0.0], np.cumsum(j)))[np.searchsorted(t, times, "right")]
                    for t, j in zip(event_times, jumps)])
    if (times[None, :] > last[np.unique(strata), None]).any():
        warnings.warn(f"times after the last follow-up of a stratum ({last.min():g}) give "
                      "NaN: the baseline is not estimated there.", DataWarning, stacklevel=3)
    L0[times[None, :] > last[:, None]] = np.nan
    beta = np.nan_to_num(res.coef.to_numpy(float), nan=0.0)
    w = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    w = w / w.sum()
    lp_rest = (np.asarray(cohort.X @ beta).ravel()
               - np.asarray(cohort.X[:, columns] @ beta[columns]).ravel())
    cif = [1.0 - averaged_curve(np.exp(lp_rest + setting @ beta[columns]), w, strata, L0)
           for setting in settings]
    nan = np.full(times.size, np.nan)
    curves = pd.concat([pd.DataFrame({"level": name, "time": times, "cif": c, "se": nan,
                                      "lower": nan, "upper": nan})
                        for name, c in zip(names, cif)], ignore_index=True)
    contrasts = [pd.DataFrame({"level": name, "reference": names[0], "time": times,
                               "difference": c - cif[0], "se": nan, "lower": nan, "upper": nan,
                               "ratio": c / cif[0], "ratio_lower": nan, "ratio_upper": nan})
                 for name, c in zip(names[1:], cif[1:])]
    out = AdjustedCurves(curves=curves, contrasts=(pd.concat(contrasts, ignore_index=True)
                                                   if contrasts else pd.DataFrame()),
                         rmst=None, treatment=treatment, levels=names)
    if bootstrap:
        reps = _replicates(res, columns, settings, times, strata, bootstrap, seed)
        _add_percentiles(out, 1.0 - reps, level)
    return out


def _replicates(res, columns, settings, grid, strata, B, seed) -> np.ndarray:
    """(B, levels, grid) standardised curves theta of B bootstrap refits (NaN for a replicate
    that drew no event)."""
    cohort = res.problem.cohort
    problem = Problem.from_cohort(cohort, res.problem.options, res.problem.unpenalized)
    lam1, lam2 = problem.penalty_vectors(res.penalty)
    aliased = np.isnan(res.coef.to_numpy(float))
    start = np.where(aliased, 0.0, res.beta)
    codes, n_subjects = subjects(cohort)
    w0 = np.ones(cohort.n) if cohort.weights is None else np.asarray(cohort.weights, float)
    fine_gray = res.spec.get("model") == "fine_gray"
    event = (np.asarray(cohort.event) == res.spec.get("cause", 1)) if fine_gray else (
        np.asarray(cohort.event) > 0)
    out = np.full((B, len(settings), grid.size), np.nan)
    for k in range(B):
        w = w0 * bootstrap_counts(n_subjects, seed, k)[codes]
        if not np.any(event & (w > 0)):
            continue
        problem.set_weights(w)
        beta = problem.solve(lam1, lam2, start, aliased, precise=False).beta   # a replicate
        beta[aliased] = 0.0
        if fine_gray:
            event_times, jumps, last = subdistribution_hazard(res, beta, w)
            L0 = np.vstack([np.concatenate(([0.0], np.cumsum(j)))[
                np.searchsorted(t, grid, "right")] for t, j in zip(event_times, jumps)])
            offset = 0.0
        else:
            b = baseline(cohort, res.problem.model.data, beta, res.spec["ties"], w)
            L0 = np.vstack([b.cumulative(b.hazard, s, grid) for s in range(len(b.times))])
            last, offset = b.last, b.offset
        L0[grid[None, :] > last[:, None]] = np.nan
        lp_rest = (np.asarray(cohort.X @ beta).ravel()
                   - np.asarray(cohort.X[:, columns] @ beta[columns]).ravel() - offset)
        for l, setting in enumerate(settings):
            out[k, l] = averaged_curve(np.exp(lp_rest + setting @ beta[columns]), w / w.sum(),
                                       strata, L0)
    problem.release()
    return out


def _add_percentiles(out, reps, level) -> None:
    """boot_lower, boot_upper of the curves (reps: B x levels x times, on the curves' scale)
    and of the differences from the first level."""
    q = [(1 - level) / 2, (1 + level) / 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # an all-NaN time (after follow-up)
        lo, hi = np.nanquantile(reps, q, axis=0)
        out.curves["boot_lower"], out.curves["boot_upper"] = lo.ravel(), hi.ravel()
        if len(out.levels) > 1:
            lo, hi = np.nanquantile(reps[:, 1:] - reps[:, :1], q, axis=0)
            out.contrasts["boot_lower"], out.contrasts["boot_upper"] = lo.ravel(), hi.ravel()


def _add_rmst_percentiles(rmst, per_level, level) -> None:
    """boot_lower, boot_upper of the RMST rows (the levels, then the differences)."""
    q = [(1 - level) / 2, (1 + level) / 2]
    values = np.hstack([per_level, per_level[:, 1:] - per_level[:, :1]])
    lo, hi = np.nanquantile(values, q, axis=0)
    rmst["boot_lower"], rmst["boot_upper"] = lo, hi


def _default_levels(column) -> list[float]:
    """A numeric treatment's two values when it has two (a 1/2 code), else 0 and 1."""
    dense = column.toarray().ravel() if hasattr(column, "toarray") else np.asarray(column)
    distinct = np.unique(dense)
    return [float(v) for v in distinct] if distinct.size == 2 else [0.0, 1.0]


def treatment_columns(cohort, treatment, levels):
    """(columns of the treatment, one setting vector per level, level names): a numeric
    covariate set to each level, or a text one's one-hot columns (adjusted_rates too)."""
    if treatment in cohort.names and treatment not in cohort.reference_levels:
        j = cohort.names.index(treatment)
        column = cohort.X[:, j]
        values = _default_levels(column) if levels is None else [float(v) for v in levels]
        lo, hi = float(column.min()), float(column.max())
        outside = [v for v in values if not lo <= v <= hi]
        if outside:
            warnings.warn(f"levels {outside} of {treatment!r} lie outside its values in the "
                          f"data ({lo:g} to {hi:g}): the adjusted estimates there extrapolate "
                          "the model. Choose levels within the data.", DataWarning,
                          stacklevel=4)
        return np.array([j]), [np.array([v]) for v in values], values
    if treatment in cohort.reference_levels:
        prefix = f"{treatment}["
        columns = [j for j, name in enumerate(cohort.names) if name.startswith(prefix)]
        known = [cohort.reference_levels[treatment]] + [cohort.names[j][len(prefix):-1]
                                                        for j in columns]
        chosen = known if levels is None else [str(v) for v in levels]
        unknown = [v for v in chosen if v not in known]
        if unknown:
            raise CohortError(f"treatment {treatment!r} has no level(s) {unknown}; its levels "
                              f"are {known}.")
        settings = [np.array([1.0 if known[1 + k] == v else 0.0 for k in range(len(columns))])
                    for v in chosen]
        return np.array(columns), settings, chosen
    coded = [n for n in cohort.names if n.startswith(f"{treatment}[")]
    if coded:        # a formula's contrasts (s[T.b]): the levels are not Cohort.from_frame's
        raise CohortError(f"treatment {treatment!r} enters the fit as the formula's columns "
                          f"{coded}; adjusted curves set a text treatment by its levels, which "
                          "they read from Cohort.from_frame's encoding: build the cohort with "
                          f"covariates=[...] naming {treatment!r} (its levels become "
                          f"{treatment}[level]), or code it 0/1 in the data.")
    raise CohortError(f"treatment {treatment!r} is not a covariate of the fit; its covariates "
                      f"are {cohort.names[:10]}{' ...' if cohort.p > 10 else ''}. Name the "
                      "column given to Cohort.from_frame.")


def _rmst_grid(b, strata, times, tau) -> np.ndarray:
    """0, the report times, tau and every event time before tau (where the curves step)."""
    tau = float(tau)
    if not np.isfinite(tau) or tau <= 0 or np.any(tau > b.last[np.unique(strata)]):
        raise ValueError(f"rmst_tau must be positive and within every stratum's follow-up "
                         f"(up to {b.last.min():g}); got {tau!r}.")
    steps = np.concatenate([t[t < tau] for t in b.times])
    return np.unique(np.concatenate(([0.0], times, steps, [tau])))


BLOCK = 2048     # rows per block of averaged_curve: a (BLOCK x T) exp stays in cache


def averaged_curve(r, w, strata, H0) -> np.ndarray:
    """theta(t) = sum_i w_i exp(-r_i H0[s_i, t]), block by block with NumPy's vectorised exp
    (several times Numba's scalar one here)."""
    T = H0.shape[1]
    theta = np.zeros(T)
    buf = np.empty((BLOCK, T))
    one = H0.shape[0] == 1
    for lo in range(0, r.size, BLOCK):
        m = min(BLOCK, r.size - lo)
        e = buf[:m]
        if one:
            np.multiply.outer(-r[lo:lo + m], H0[0], out=e)
        else:
            np.multiply(-r[lo:lo + m, None], H0[strata[lo:lo + m]], out=e)
        np.exp(e, out=e)
        theta += w[lo:lo + m] @ e
    return theta


@njit(cache=True)
def row_functional(r, w, strata, H0, c):
    """For L_i = sum_l sum_k c[l, k] S_il(t_k) (r: levels x n): sum_i w_i L_i, sum_i w_i^2 L_i
    and sum_i w_i^2 L_i^2."""
    n_levels, n = r.shape
    T = H0.shape[1]
    out = np.zeros(3)
    for i in range(n):
        s = strata[i]
        L = 0.0
        for l in range(n_levels):
            for k in range(T):
                if c[l, k] != 0.0:
                    L += c[l, k] * np.exp(-r[l, i] * H0[s, k])
        out[0] += w[i] * L
        out[1] += w[i] * w[i] * L
        out[2] += w[i] * w[i] * L * L
    return out


def _pointwise_variance(terms, parts, cross=None) -> np.ndarray:
    """Delta-method variance at each time of F(t) = sum_l c_l(t) theta_l(t) over ``terms``
    [(c_l, estimates of level l)]: one level, or a level and the reference (``cross`` their
    row moment sum_i w_i^2 S_i1 S_i0).  NaN without ``parts`` (no covariance)."""
    coef = [np.broadcast_to(np.asarray(c, float), e["theta"].shape) for c, e in terms]
    est = [e for _, e in terms]
    F = sum(c * e["theta"] for c, e in zip(coef, est))
    if parts is None:
        return np.full(F.shape, np.nan)
    # the standardisation over the rows: sum_i w_i^2 (F_i - F)^2
    second = sum(c * c * e["M2"] for c, e in zip(coef, est))
    if len(terms) == 2:
        second = second + 2 * coef[0] * coef[1] * cross
    first = sum(c * e["M1"] for c, e in zip(coef, est))
    var = second - 2 * F * first + F ** 2 * parts["w_sq"]
    g = sum(c[:, None] * e["g"] for c, e in zip(coef, est))
    var = var + np.einsum("tk,kl,tl->t", g, parts["V"], g)
    a = sum(c[None, :] * e["A"] for c, e in zip(coef, est))
    var = var + np.sum(a ** 2 * parts["cumV"], axis=0)
    return np.maximum(var, 0.0)


def _rmst(grid, names, est, parts, w, strata, H0, z, tau=None) -> pd.DataFrame:
    """The adjusted RMST up to tau per level, and its differences from the
    first level, with delta-method standard errors."""
    tau = rmst_tau = float(grid[-1]) if tau is None else tau
    # theta(grid[k]) holds on [grid[k], grid[k+1]); the report times may lie beyond tau
    width = np.where(grid < tau, np.minimum(np.append(grid[1:], tau), tau) - grid, 0.0)
    r = np.vstack([e["r"] for e in est])
    rows = []
    combos = [(name, {l: 1.0}) for l, name in enumerate(names)]
    combos += [(f"{name} - {names[0]}", {l: 1.0, 0: -1.0}) for l, name in enumerate(names)
               if l > 0]
    for label, weights in combos:
        c = np.zeros((len(est), grid.size))
        for l, sign in weights.items():
            c[l] = sign * width
        value = float(sum((c[l] * est[l]["theta"]).sum() for l in weights))
        se = np.nan
        if parts is not None:
            moments = row_functional(r, w, strata, H0, c)
            var = moments[2] - 2 * value * moments[1] + value ** 2 * parts["w_sq"]
            g = sum(c[l] @ est[l]["g"] for l in weights)
            var += g @ parts["V"] @ g
            # the baseline's noise: the increments between grid points, weighted by what every
            # later grid point's curve loads on them
            a = sum(c[l][None, :] * est[l]["A"] for l in weights)
            load = np.cumsum(a[:, ::-1], axis=1)[:, ::-1]
            increments = np.diff(np.concatenate((np.zeros((load.shape[0], 1)), parts["cumV"]),
                                                axis=1), axis=1)
            var += float(np.sum(increments * load ** 2))
            se = float(np.sqrt(max(var, 0.0)))
        rows.append({"level": label, "tau": rmst_tau, "rmst": value, "se": se,
                     "lower": value - z * se, "upper": value + z * se})
    return pd.DataFrame(rows)


def _log_log_limits(frame, z):
    """lower, upper of a standardised survival on the log(-log) scale, inside (0, 1)."""
    S, se = frame["survival"].to_numpy(), frame["se"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.exp(z * se / (S * np.abs(np.log(S))))
    return frame.assign(lower=S ** spread, upper=S ** (1 / spread))

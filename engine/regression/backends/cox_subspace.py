"""A two-direction correction of the proximal-Newton step, with the exact Cox Hessian.

The proximal-Newton step d (prox_newton) minimises a model whose Hessian in eta is replaced by
its diagonal.  That diagonal over-states the curvature (it drops the negative risk-set
cross terms), so the steps come out short and the outer iterations converge only linearly
(about 0.66 of the error left per step at N = 10^5, P = 1,000: 20-30 steps per fit).

Here the step is re-chosen in the plane of d and the previous step s = beta - beta_prev:
minimise the exact second-order model of -l plus the penalty over beta + a d + b s (the L1
coordinates that d puts at zero are put there whatever a and b, so sparsity is d's).
The exact curvature of -l along two directions costs one O(N) risk-set pass
(``direction_curvature``, the coordinate pass of cox_kernels with the column replaced by the
directions' linear predictors X d and X s), and X s is the change of eta, kept from the last
step.  On a quadratic this two-term recurrence is preconditioned conjugate gradients (the
diagonal model as preconditioner); near the optimum the Cox objective is nearly quadratic, so
the outer steps converge like CG instead of like the plain diagonal step.

The plane step is taken only when the exact model ranks it below the plain step; the solver's
line search then checks the true objective as before, so the optimum and the stopping rule are
unchanged.  The eta-space vectors live where the backend keeps eta (NumPy, or CuPy on the GPU);
the 2-3 dimensional model is solved on the host.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..row_flags import EVENT, GROUP_END, HEAD


# Above this multiple of the previous step, the step's change of eta is formed anew (one O(nnz)
# pass) rather than as U' w = uz + a (u1 - uz) + b (eta - prev_eta).  That sum is a recurrence:
# eta - prev_eta is the last step's own sum, so its rounding error is multiplied by b at every
# step and grows geometrically while |b| > 1.  Once the steps are at rounding size the plane's
# 2 x 2 system is noise and |b| of 10-50 step after step is common: eta went from 1e-15 to 3e-2
# off X beta in a dozen steps, and the line search, reading the objective at that eta, took the
# drift for descent (simulate(20_000, 200, density=0.05, seed=3), L1(5), tol=1e-14: stopped
# 0.055 above the optimum).  At |b| <= 1 the error stays at rounding size; healthy steps have
# |b| < 0.1 (10^5 x 1,000), so the extra pass is paid only at the rounding floor.
_AMPLIFIED = 1.0


class PlaneStep:
    """The plane correction for one backend: remembers the last (beta, eta) it saw.

    image(x) : X x for a coefficient vector (an eta-space vector of the backend's array module
    ``xp``); host(a) : a small array of ``xp`` as NumPy."""

    def __init__(self, image, xp=np, host=np.asarray):
        self.image, self.xp, self.host = image, xp, host
        self.reset()

    def reset(self) -> None:
        """Forget the previous step (new weights: a new objective)."""
        self._beta = self._eta = None

    def step(self, eta, v, curvature, coords, beta, delta, u1, lam1, lam2):
        """(step, X step): the step to take from ``beta``, ``delta`` or a d + b s (see the
        module docstring), and its change of eta.

        eta : X beta; v = dl/deta at beta; curvature(U) : the exact m x m (NumPy) curvature
        of -l along the rows of U (eta-space directions); u1 : X delta when the inner solve
        kept it, else None
        """
        prev_beta, prev_eta = self._beta, self._eta
        self._beta, self._eta = beta.copy(), eta.copy()
        if u1 is None:
            u1 = self.image(delta)
        if prev_beta is None or prev_beta.shape != beta.shape or not delta.any():
            return delta, u1
        s = beta - prev_beta
        z = beta + delta
        penalised = lam1 > 0
        inside = np.zeros(beta.size, bool)
        inside[coords] = True
        # s only where the plain step keeps the coordinate free: inside the working set, and
        # not an L1 coordinate that the plain step puts at zero
        drop = (s != 0) & (~inside | (penalised & (z == 0)))
        u2 = eta - prev_eta
        if drop.any():
            u2 -= self.image(np.where(drop, s, 0.0))
            s[drop] = 0.0
        if not s.any():
            return delta, u1
        # the L1 coordinates the plain step puts at zero stay there: their part d_z of d is
        # taken whole, and the plane is that of the rest d_f and s (step d_z + a d_f + b s)
        zeroed = penalised & (z == 0) & (delta != 0)
        dz = np.where(zeroed, delta, 0.0)
        Dm = np.vstack([dz, delta - dz, s])
        C, g = np.zeros((3, 3)), np.zeros(3)
        if zeroed.any():
            uz = self.image(dz)
            U = self.xp.stack([uz, u1 - uz, u2])
        else:       # d_z = 0: its row of U would be zeros; the two others only
            U = self.xp.stack([u1, u2])
        first = 3 - U.shape[0]
        C[first:, first:] = curvature(U)
        g[first:] = self.host(U @ v)
        # the L1 term linearised at the plain step's signs; L2 exact
        Q = C + (Dm * lam2) @ Dm.T
        A = Q[1:, 1:]
        rhs = g[1:] - Q[1:, 0] - Dm[1:] @ (lam2 * beta + lam1 * np.sign(z))
        det = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
        if not (A[0, 0] > 0 and A[1, 1] > 0 and det > 1e-12 * A[0, 0] * A[1, 1]):
            return delta, u1
        a = (rhs[0] * A[1, 1] - rhs[1] * A[0, 1]) / det
        b = (rhs[1] * A[0, 0] - rhs[0] * A[1, 0]) / det

        def model(w):
            """Exact second-order model of the objective's change along Dm' w."""
            new = beta + Dm.T @ w
            return (-(g @ w) + 0.5 * w @ C @ w + 0.5 * lam2 @ (new * new - beta * beta)
                    + lam1 @ (np.abs(new) - np.abs(beta)))

        w = np.array([1.0, a, b])
        if np.all(np.isfinite(w)) and model(w) < model(np.array([1.0, 1.0, 0.0])):
            step = Dm.T @ w
            if abs(b) > _AMPLIFIED:
                return step, self.image(step)
            return step, U.T @ self.xp.asarray(w[first:])
        return delta, u1


def direction_curvature(U, D, w, flags, efron, has_start, stop, start, start_order, bounds):
    """Exact curvature of -l along the rows of U (m <= 3 directions in eta, sorted rows):
    C[a, b] = sum over event terms of wbar (m2_ab - m1_a m1_b), m1, m2 the risk-set means of
    u_a and u_a u_b under D (cox_kernels.coordinate_grad_hess with m columns at once).
    One O(N) pass; Breslow or Efron ties, strata and entry times."""
    m = U.shape[0]
    # fewer than three: the first stands in for the missing ones (read from cache, not a new
    # N-vector of zeros), whose entries of C are dropped; the m x m block does not read them
    u = [U[a] for a in range(m)] + [U[0]] * (3 - m)
    c = _curvature3(u[0], u[1], u[2], D, w, flags, efron, has_start, stop, start,
                    start_order, bounds)
    C = np.array([[c[0], c[1], c[2]], [c[1], c[3], c[4]], [c[2], c[4], c[5]]])
    return C[:m, :m]


# The pass below keeps its sums in tuples of scalars (the risk set's moments of three
# directions a, b, c: 1, a, b, c, aa, ab, ac, bb, bc, cc) so that they stay in registers; small
# arrays indexed by a run-time m cost about ten times as much per row.

@njit(inline="always")
def _moments(x, a, b, c):
    """One row's weight x times (1, a, b, c, aa, ab, ac, bb, bc, cc)."""
    xa, xb, xc = x * a, x * b, x * c
    return (x, xa, xb, xc, xa * a, xa * b, xa * c, xb * b, xb * c, xc * c)


@njit(inline="always")
def _axpy(y, f, x):
    """y + f x, elementwise over the moment tuples."""
    return (y[0] + f * x[0], y[1] + f * x[1], y[2] + f * x[2], y[3] + f * x[3],
            y[4] + f * x[4], y[5] + f * x[5], y[6] + f * x[6], y[7] + f * x[7],
            y[8] + f * x[8], y[9] + f * x[9])


@njit(inline="always")
def _event_term(C, M, wt):
    """C plus wt (m2 - m1 m1') for the risk set with moments M (upper triangle, 6 entries)."""
    inv = 1.0 / M[0]
    a, b, c = M[1] * inv, M[2] * inv, M[3] * inv
    return (C[0] + wt * (M[4] * inv - a * a), C[1] + wt * (M[5] * inv - a * b),
            C[2] + wt * (M[6] * inv - a * c), C[3] + wt * (M[7] * inv - b * b),
            C[4] + wt * (M[8] * inv - b * c), C[5] + wt * (M[9] * inv - c * c))


@njit(cache=True, nogil=True)
def _curvature3(u0, u1, u2, D, w, flags, efron, has_start, stop, start, start_order, bounds):
    """The upper triangle (00, 01, 02, 11, 12, 22) of direction_curvature for three
    directions.  R: the moments of the rows at or after the current time; S: of those that
    entered after it (start >= t); E: of the current time's events."""
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    R = S = E = zero
    C = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    W = 0.0
    d = 0
    stratum = -1
    q = 0
    for i in range(u0.size):
        f = flags[i]
        if f & HEAD:
            R = S = zero
            stratum += 1
            q = bounds[stratum]
        x = _moments(D[i], u0[i], u1[i], u2[i])
        R = _axpy(R, 1.0, x)
        if f & EVENT:
            E = _axpy(E, 1.0, x)
            W += w[i]
            d += 1
        if f & GROUP_END:
            if d > 0:
                if has_start:
                    t = stop[i]
                    end = bounds[stratum + 1]
                    while q < end and start[q] >= t:
                        r = start_order[q]
                        S = _axpy(S, 1.0, _moments(D[r], u0[r], u1[r], u2[r]))
                        q += 1
                at_risk = _axpy(R, -1.0, S)
                if efron and d > 1:
                    for l in range(d):
                        C = _event_term(C, _axpy(at_risk, -l / d, E), W / d)
                else:
                    C = _event_term(C, at_risk, W)
            E = zero
            W = 0.0
            d = 0
    return C

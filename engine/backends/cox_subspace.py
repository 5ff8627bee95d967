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

        eta : X beta; v = dl/deta at beta; curvature(U) : the exact m x m (NumPy) curvature of -l along the rows of U (eta-space directions); u1 : X delta
        when the inner solve kept it, else None
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
        uz = self.image(dz) if zeroed.any() else self.xp.zeros_like(u1)
        Dm = np.vstack([dz, delta - dz, s])
        U = self.xp.stack([uz, u1 - uz, u2])
        C = np.zeros((3, 3))
        if zeroed.any():
            C[:, :] = curvature(U)
        else:       # d_z = 0: the curvature along the two others only
            C[1:, 1:] = curvature(U[1:])
        g = self.host(U @ v)
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
            return step, U.T @ self.xp.asarray(w)
        return delta, u1


@njit(cache=True, nogil=True)
def direction_curvature(U, D, w, flags, efron, has_start, stop, start, start_order, bounds):
    """Exact curvature of -l along the rows of U (m directions in eta, sorted rows):
    C[a, b] = sum over event terms of wbar (m2_ab - m1_a m1_b), m1, m2 the risk-set means of
    u_a and u_a u_b under D (cox_kernels.coordinate_grad_hess with m columns at once).
    One O(N m^2) pass; Breslow or Efron ties, strata and entry times."""
    m, n = U.shape
    R1 = np.zeros(m)
    S1 = np.zeros(m)
    E1 = np.zeros(m)
    R2 = np.zeros((m, m))
    S2 = np.zeros((m, m))
    E2 = np.zeros((m, m))
    a1 = np.zeros(m)
    a2 = np.zeros((m, m))
    C = np.zeros((m, m))
    R0 = S0 = E0 = W = 0.0
    d = 0
    stratum = -1
    q = 0
    for i in range(n):
        f = flags[i]
        if f & HEAD:
            R0 = S0 = 0.0
            R1[:] = 0.0
            S1[:] = 0.0
            R2[:, :] = 0.0
            S2[:, :] = 0.0
            stratum += 1
            q = bounds[stratum]
        di = D[i]
        R0 += di
        ev = f & EVENT
        for a in range(m):
            ua = U[a, i] * di
            R1[a] += ua
            for b in range(a, m):
                R2[a, b] += ua * U[b, i]
        if ev:
            E0 += di
            W += w[i]
            d += 1
            for a in range(m):
                ua = U[a, i] * di
                E1[a] += ua
                for b in range(a, m):
                    E2[a, b] += ua * U[b, i]
        if f & GROUP_END:
            if d > 0:
                if has_start:
                    t = stop[i]
                    end = bounds[stratum + 1]
                    while q < end and start[q] >= t:
                        r = start_order[q]
                        S0 += D[r]
                        for a in range(m):
                            ua = U[a, r] * D[r]
                            S1[a] += ua
                            for b in range(a, m):
                                S2[a, b] += ua * U[b, r]
                        q += 1
                terms = d if (efron and d > 1) else 1
                wt = W / d if (efron and d > 1) else W
                for l in range(terms):
                    c = l / d if terms > 1 else 0.0
                    inv = 1.0 / (R0 - S0 - c * E0)
                    for a in range(m):
                        a1[a] = (R1[a] - S1[a] - c * E1[a]) * inv
                    for a in range(m):
                        for b in range(a, m):
                            a2[a, b] = (R2[a, b] - S2[a, b] - c * E2[a, b]) * inv
                            C[a, b] += wt * (a2[a, b] - a1[a] * a1[b])
            E0 = W = 0.0
            E1[:] = 0.0
            E2[:, :] = 0.0
            d = 0
    for a in range(m):
        for b in range(a):
            C[a, b] = C[b, a]
    return C

"""Problem: a cohort prepared for one likelihood, the part of a fit that does not depend on the
penalty.

``Problem.from_cohort(cohort, options)`` splits the cohort at its cut points, sorts it once and
hands it to a backend; then any number of solves reuse that layout: a penalty path, the folds
of cross-validation and the replicates of the bootstrap (which change only the case weights,
``set_weights``), the refits of a profile likelihood.  ``release()`` frees what the backend holds
(device memory for a kept GPU fit).  Cyclops' drivers drive its CyclicCoordinateDescent object
the same way.
"""
from __future__ import annotations

import copy
import warnings

import numpy as np

from ..data import collinearity
from ..data.episodes import interval_names, split_at_cut_points, split_into_bands
from ..core.errors import CohortError, DataWarning
from .models.cox import CoxModel
from .models.fine_gray import FineGrayModel
from .models.logistic import LogisticModel
from .models.poisson import PoissonModel
from .models.sccs import SccsModel
from .options import FitOptions
from .priors import penalty_vectors
from ..sccs.data import SccsData
from .solvers import SolverState, solve
from .variance import cluster_codes

# The collinearity check (the information over the unpenalised columns) runs below this cost.
ALIAS_CHECK_BUDGET = 5e8


class Problem:
    """One likelihood on one prepared cohort.

    Attributes
    ----------
    model : the likelihood object (models/): names, p, scale and the backend's kernels
    cohort : the cohort after cut points (its episodes)
    subjects : the caller's cohort, before cut points (the PH check splits it anew as R's
        survSplit: (start, stop] episodes whatever route the fit took)
    options : FitOptions
    unpenalized : names always left out of the penalty (the model's own, e.g. the intercept,
        and the caller's, expanded over cut-point intervals)
    cut_points : dict, as asked (options.cut_points; empty for none)
    n_rows, n_events : of the caller's cohort (Fine-Gray: events of the cause)
    clusters : (codes, n_clusters, label): the cluster of each row of ``cohort`` for the robust
        variance (options.cluster, else the subject id, else each row)
    """

    def __init__(self, model, cohort, options: FitOptions, unpenalized, cut_points, n_rows,
                 n_events):
        self.model, self.cohort, self.options = model, cohort, options
        self.unpenalized = list(unpenalized)
        self.cut_points = dict(cut_points or {})
        self.n_rows, self.n_events = int(n_rows), int(n_events)
        self._aliased = {}

    @classmethod
    def from_cohort(cls, cohort, options: FitOptions | None = None, unpenalized=()) -> Problem:
        """Split at ``options.bands`` and ``options.cut_points`` and sort: ready for
        ``solve``."""
        options = FitOptions() if options is None else options
        if isinstance(cohort, SccsData) and options.model != "sccs":
            raise CohortError(f"model={options.model!r} cannot fit an engine.SccsData (self-"
                              "controlled case series eras): fit it with model='sccs'; for a "
                              f"{options.model} model build an engine.Cohort with "
                              "Cohort.from_frame.")
        caller = cohort
        n_rows, n_events = cohort.n, cohort.n_events
        if options.model != "logistic" and getattr(cohort, "binary_outcome", False):
            raise ValueError(f"model={options.model!r} needs follow-up times, but the cohort was "
                             "built with time=None (a binary outcome): fit model='logistic', or "
                             "rebuild the cohort with time=.")
        if isinstance(unpenalized, str):
            unpenalized = [unpenalized]
        if options.bands:               # Poisson's baseline rates: one per band, unpenalised
            split = split_into_bands(cohort, options.bands)
            unpenalized = [*unpenalized, *split.names[cohort.p:]]
            cohort = split
        cut_points = options.cut_points
        if cut_points:
            # Poisson's episodes keep their person-time as (start, stop] rows: an interval's
            # stratum (the "strata" route) would be a rate of its own, not an interval effect
            route = ("counting" if options.model == "poisson" and options.tv_route == "auto"
                     else options.tv_route)
            cohort = split_at_cut_points(cohort, cut_points, route)
            unpenalized = _expand_split_names(unpenalized, cut_points)
        model = _likelihood(cohort, options)
        unpenalized = list(dict.fromkeys([*getattr(model, "unpenalized", ()), *unpenalized]))
        if options.model == "fine_gray":
            n_events = model.n_events
        problem = cls(model, cohort, options, unpenalized, cut_points, n_rows, n_events)
        problem.subjects = caller
        problem.clusters = cluster_codes(caller, cohort, options.cluster)
        return problem

    # -- what a driver asks ----------------------------------------------------------------
    @property
    def names(self) -> list:
        return self.model.names

    @property
    def p(self) -> int:
        return self.model.p

    def penalty_vectors(self, penalty) -> tuple[np.ndarray, np.ndarray]:
        """(lam1, lam2) of ``penalty`` with the problem's unpenalised names at zero."""
        return penalty_vectors(self.names, penalty, self.unpenalized)

    def set_weights(self, w) -> None:
        """Replace the case weights (caller's row order): a fold's training set, a bootstrap
        sample's counts.  The sorted layout is kept."""
        self._check_live()
        self.model.set_weights(w)

    def set_beta(self, beta) -> None:
        self._check_live()
        self.model.set_beta(np.asarray(beta, dtype=np.float64))

    def loglik(self, beta=None) -> float:
        """The log-likelihood at ``beta`` (default: where the model stands)."""
        self._check_live()
        if beta is not None:
            self.set_beta(beta)
        return float(self.model.loglik())

    def gradient(self, beta=None) -> np.ndarray:
        self._check_live()
        if beta is not None:
            self.set_beta(beta)
        return self.model.loglik_gradient()[1]

    def solve(self, lam1, lam2, init=None, fixed=None, solver=None, tol=None, max_iter=None,
              progress=None, gradient=None, precise=True) -> SolverState:
        """Minimise -l + penalty from ``init`` (by default the model's start: zeros, or the
        intercept-only fit of a model with an intercept); coordinates in ``fixed``
        stay at their ``init`` values (a profile likelihood).  Solver, tol and max_iter
        default to the problem's options.  ``gradient``: dl/dbeta at ``init`` where it is
        known, e.g. the returned state's ``gradient`` of a solve on the same weights that
        ended at ``init`` (the next penalty of a path), or a near one (that solve's on other
        weights): it only screens the L1 coordinates, sparing the screening pass, and the KKT
        check at convergence reads the exact gradient.  ``precise`` False: the coarser stop
        of fits that feed a curve (solvers.solve).  The model is left at the solution."""
        self._check_live()
        o = self.options
        m = self.model
        beta = m.start() if init is None else np.array(init, dtype=np.float64)
        if beta.shape != (m.p,):
            raise ValueError(f"init must have {m.p} values (one per covariate), got {beta.shape}")
        if not np.all(np.isfinite(beta)):
            bad = [m.names[j] for j in np.flatnonzero(~np.isfinite(beta))[:5]]
            raise ValueError(f"init must be finite; it is not for {bad}. Pass finite starting "
                             "values or none.")
        frozen = np.zeros(m.p, bool) if fixed is None else np.array(fixed, dtype=bool)
        m.set_beta(beta)
        state = SolverState(beta=beta, lam1=lam1, lam2=lam2, frozen=frozen, gradient=gradient)
        solve(m, state, solver or o.solver, tol or o.tol, max_iter or o.max_iter,
              self.n_events, progress, precise)
        m.set_beta(state.beta)
        return state

    def aliased(self, unpenalised: np.ndarray) -> np.ndarray:
        """Unpenalised columns the likelihood cannot estimate (engine.collinearity reads the
        information at beta = 0 over the rows that enter its risk sets, strata, cases): to be
        held at zero and reported as NaN, with a warning naming them and their partners.
        Skipped when the check would cost more than a fit (many dense unpenalised columns)."""
        m = self.model
        out = np.zeros(m.p, bool)
        cols = np.flatnonzero(unpenalised)
        if cols.size == 0:
            return out
        key = tuple(cols)
        if key not in self._aliased:
            found = []
            if self._alias_check_cost(cols) <= ALIAS_CHECK_BUDGET:
                m.set_beta(np.zeros(m.p))
                found = [(int(cols[a]), [int(cols[q]) for q in partners]) for a, partners in
                         collinearity.aliased_columns(m.information(cols)[2], m.scale[cols])]
            self._aliased[key] = found
            for col, partners in found:
                with_ = (f"a linear combination of {', '.join(m.names[q] for q in partners)} "
                         "(aliased, on the rows that enter its risk sets, strata or cases)"
                         if partners else "constant within every risk set (or stratum, or "
                         "case) and carries no information (aliased)")
                warnings.warn(f"covariate {m.names[col]!r} is {with_}: its coefficient cannot "
                              "be estimated and is reported as NaN. Remove it, or penalise it.",
                              DataWarning, stacklevel=4)
        out[[col for col, _ in self._aliased[key]]] = True
        return out

    def _alias_check_cost(self, cols) -> float:
        """Operations of the information over ``cols``: the pairs of non-zeros within rows
        plus one dense s x s update per event.  The pairs are counted row by row only when
        their bound s x nnz (a row holds at most s of the columns) is over the budget: a few
        dense columns (a spline of the exposure) are priced from their column counts."""
        names = set(self.model.names[j] for j in cols)
        cohort = self.cohort
        in_x = np.array([j for j, name in enumerate(cohort.names) if name in names], np.int64)
        own = len(cols) - in_x.size                        # the model's own columns: dense
        per_event = float(max(self.n_events, 1)) * len(cols) ** 2
        indptr = cohort.X.indptr
        nnz = float(np.sum(indptr[in_x + 1] - indptr[in_x])) + own * cohort.X.shape[0]
        if len(cols) * nnz + per_event <= ALIAS_CHECK_BUDGET:
            return len(cols) * nnz + per_event
        X = cohort.X if in_x.size == cohort.X.shape[1] else cohort.X[:, in_x]
        row_nnz = np.bincount(X.indices, minlength=X.shape[0]).astype(float) + own
        return float(row_nnz @ row_nnz) + per_event

    def twin(self) -> Problem:
        """The same sorted problem with a fit state of its own (weights, coefficients): threads
        solve variants of one layout at once without a second sort or a second copy of X.
        Cox only (``CoxModel.twin``)."""
        self._check_live()
        twin = copy.copy(self)
        twin.model = self.model.twin()
        twin._aliased = {}
        return twin

    def release(self) -> None:
        """Free what the backend holds (a GPU fit's device memory); the problem cannot be
        solved again afterwards."""
        self.model.backend = None

    @property
    def released(self) -> bool:
        """Whether ``release`` freed the backend (nothing can be computed on it since)."""
        return self.model.backend is None

    def _check_live(self) -> None:
        if self.released:
            raise RuntimeError("this problem was released (Problem.release freed its data); "
                               "prepare it again with Problem.from_cohort")


def _likelihood(cohort, o: FitOptions):
    """The model object of ``o.model`` on ``cohort``."""
    if o.model == "fine_gray":
        return FineGrayModel(cohort, cause=o.cause, backend=o.backend,
                             censoring_strata=o.censoring_strata,
                             censoring_ties=o.censoring_ties)
    if o.model == "logistic":
        return LogisticModel(cohort, backend=o.backend)
    if o.model == "poisson":
        return PoissonModel(cohort, cause=o.cause, backend=o.backend)
    if o.model == "sccs":
        return SccsModel(cohort, backend=o.backend)
    return CoxModel(cohort, ties=o.ties, backend=o.backend, precision=o.precision)


def _expand_split_names(unpenalized, cut_points):
    """An unpenalised covariate with cut points leaves all its interval columns unpenalised."""
    out = []
    for u in unpenalized:
        out.extend(interval_names(u, cut_points[u]) if u in cut_points else [u])
    return out

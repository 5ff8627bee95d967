"""The survival workbench's state: its kept fits, its last cross-validation, path and bootstrap,
their settings (folds, grid points, replicates) and the jobs that make them, one per session
beside the Store.

The jobs snapshot the Store's data, roles, design and options (the design stays in the Store,
where every page's cohort is built from it); the OMOP page keeps its study's stratified fit here
too, so it joins the Results comparison and the exports. No Panel widgets and no numerics here.
"""

from __future__ import annotations

import param

from ..data.loading import DataLoadError
from ..data.memory import check_fit
from ..data.store import Store
from .jobs import BootstrapJob, CrossValidationJob, FitJob, KeptFit, PathJob


class Workbench(param.Parameterized):
    """The kept fits and last runs of the Design, Fit and Results pages, for one session."""

    store = param.ClassSelector(class_=Store, doc="The data, roles, design and options fitted.")
    fits = param.List(default=[], doc="KeptFit records, oldest first.")
    cv = param.Parameter(default=None, doc="The last CrossValidationRun (Results draws it).")
    path = param.Parameter(default=None, doc="The last PathRun (the Fit tab's path plot).")
    bootstrap = param.Parameter(default=None, doc="The last BootstrapRun (the Fit tab's "
                                                  "bootstrap intervals).")
    bootstrap_replicates = param.Integer(default=200, bounds=(20, 10_000),
                                         doc="Replicates of the Fit tab's bootstrap.")
    cv_folds = param.Integer(default=10, bounds=(2, None),
                             doc="Folds of the cross-validation of the penalty strength.")
    cv_grid = param.Integer(default=10, bounds=(2, None),
                            doc="Points of the lambda grid (cross-validation and the path).")

    def next_fit_name(self) -> str:
        taken = {f.name for f in self.fits}
        k = len(self.fits) + 1
        while f"fit {k}" in taken:
            k += 1
        return f"fit {k}"

    def fit_job(self, name: str | None = None, **overrides) -> FitJob:
        """Snapshot the data, roles and options into a job that a worker thread can run."""
        s = self.store
        if s.cut_points:
            unknown = [k for k in s.cut_points if k not in s.covariates]
            if unknown:
                raise DataLoadError(f"cut points are set for {unknown}, which are not covariates")
        curved = sorted((set(s.cut_points) | set(s.fit_options()["unpenalized"]))
                        & set(s.forms))
        if curved:
            raise DataLoadError(f"cut points and the unpenalized list take linear terms; "
                                f"{curved} have another form (Design tab)")
        factory = s.make_cohort_factory()
        check_fit(s)
        options = {**s.fit_options(), **overrides}
        spec = s.spec()
        spec["options"].update({k: v for k, v in overrides.items() if isinstance(v, str)})
        scale = None
        if (s.penalty != "none" and s.strength_as == "fraction"
                and s.known_lambda_max() is None and "penalty" not in overrides):
            scale = {"fraction": float(s.strength_fraction), "key": s.penalty_key(),
                     "kwargs": s.lambda_max_kwargs()}
        return FitJob(name or self.next_fit_name(), spec, factory, options,
                      frame=s.upload_frame(), scale=scale)

    def keep(self, fit: KeptFit) -> None:
        self.fits = [*self.fits, fit]

    def keep_replacing(self, fit: KeptFit) -> None:
        """Keep ``fit``, dropping an earlier fit of the same name (a rerun study)."""
        self._drop(fit.name, keep=fit)

    # ------------------------------------------------------------------------------------
    # cross-validation, the path and the bootstrap
    def cv_job(self, name: str | None = None) -> CrossValidationJob:
        """Snapshot for engine.cross_validate of the current L1/L2 penalty's strength."""
        s = self.store
        if s.penalty == "none":
            raise DataLoadError("choose an L1 or L2 penalty in the Design tab; "
                                "cross-validation chooses its strength")
        if s.model != "cox":
            raise DataLoadError("cross-validation of the penalty is for the Cox model")
        if s.cut_points:
            raise DataLoadError("cross-validation does not take cut points; clear them in "
                                "the Design tab")
        factory = s.make_cohort_factory()
        check_fit(s)
        options = {"model": "cox", "penalty": s.penalty.lower(), "folds": int(self.cv_folds),
                   "grid": int(self.cv_grid), "seed": 0, "ties": s.effective_ties,
                   "unpenalized": list(s.fit_options()["unpenalized"]),
                   "backend": s.backend}
        name = name or f"{self.next_fit_name()} (CV {s.penalty})"
        return CrossValidationJob(name, s.spec(), factory, options,
                                  frame=s.upload_frame())

    def bootstrap_job(self) -> BootstrapJob:
        """Snapshot for engine.bootstrap of the design as a fit would take it (model, ties,
        penalty, cut points): percentile intervals from resampled subjects."""
        s = self.store
        lam = s.chosen_lambda()
        if s.penalty != "none" and lam is None:
            raise DataLoadError("the penalty's lambda is a fraction of lambda_max, which is not "
                                "known yet for this design: fit once (or draw the path), then "
                                "bootstrap")
        factory = s.make_cohort_factory()
        check_fit(s)
        options = {**s.fit_options(), "penalty": s.penalty_object(lam),
                   "replicates": int(self.bootstrap_replicates), "seed": 0}
        return BootstrapJob(f"bootstrap of {int(self.bootstrap_replicates)} replicates",
                            s.spec(), factory, options)

    def path_job(self) -> PathJob:
        """Snapshot for engine.path of the current L1/L2 penalty over ``cv_grid`` strengths."""
        s = self.store
        if s.penalty == "none":
            raise DataLoadError("choose an L1 or L2 penalty in the Design tab; the path shows "
                                "the fits along its strength")
        if s.model != "cox":
            raise DataLoadError("the regularisation path is drawn for the Cox model")
        if s.cut_points:
            raise DataLoadError("the path does not take cut points; clear them in the Design "
                                "tab")
        options = {"model": "cox", "penalty": s.penalty.lower(), "grid": int(self.cv_grid),
                   "unpenalized": list(s.fit_options()["unpenalized"]),
                   "ties": s.effective_ties, "backend": s.backend}
        return PathJob(f"{s.penalty} path", s.make_cohort_factory(), options,
                       s.penalty_key())

    def remove_fit(self, name: str) -> None:
        self._drop(name)

    def _drop(self, name: str, keep: KeptFit | None = None) -> None:
        """Forget the fits called ``name`` (keeping ``keep`` in their place, if given) and free
        what their problems hold (GPU memory), unless ``keep`` still uses that result."""
        gone = [f for f in self.fits if f.name == name]
        self.fits = [*(f for f in self.fits if f.name != name), *([keep] if keep else [])]
        for fit in gone:
            if keep is None or fit.result is not keep.result:
                fit.release()

    def get_fit(self, name: str | None) -> KeptFit | None:
        if not self.fits:
            return None
        return next((f for f in self.fits if f.name == name), self.fits[-1])

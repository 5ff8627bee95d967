"""Multiple imputation of the design's missing covariates, shown inside Results: the Data
tab's current Cox design fitted to m completed data sets (engine.impute: SMC-FCS or chained
equations) and pooled by Rubin's rules, beside the fit shown (a complete-case fit when the
Data tab drops rows with missing values). Computed on request, by the page's job runner."""

from __future__ import annotations

import pandas as pd
import panel as pn
import param
from panel.viewable import Viewer

import engine

from ..data.store import Store
from ..shell.job_runner import JobRunner
from ..shell.widgets import markdown, show, table, while_filled

METHODS = {"SMC-FCS (compatible with the Cox model)": "smcfcs",
           "chained equations (MICE)": "mice"}


def design_or_why(store: Store) -> tuple[dict | None, str]:
    """(snapshot, '') of the design: its roles, the columns to impute and the missing values
    per covariate (read off the data's covariate columns: no copy of the table, which the
    page asks for at every change of the design and every fit shown); (None, why) when the
    current design cannot be imputed here."""
    s = store
    if not s.loaded or s.time is None or s.event is None or not s.covariates:
        return None, "Load data and choose the time, event and covariates first (Data tab)."
    if s.simulated is not None:
        return None, "A simulated cohort has no missing values."
    reasons = [(s.model != "cox", "a Cox model (Design tab)"),
               (s.penalty != "none", "no penalty (Rubin's rules pool estimates with a "
                                     "variance)"),
               (s.start is not None, "one row per subject (impute before splitting into "
                                     "(start, stop] rows)"),
               (bool(s.forms or s.interactions), "linear terms (the imputation model is the "
                                                 "Cox model of the columns themselves)"),
               (bool(s.cut_points), "no cut points"),
               (s.competing_risks, "one event type")]
    needs = [text for failed, text in reasons if failed]
    if needs:
        return None, "Multiple imputation here needs " + "; ".join(needs) + "."
    kwargs = s.role_kwargs()
    covariates = list(kwargs["covariates"])
    absent = s.data[covariates].isna()
    missing = absent.sum()
    incomplete = [c for c in covariates if missing[c]]
    if not incomplete:
        return None, "No covariate of the design misses a value: there is nothing to impute."
    return {"time": kwargs["time"], "event": kwargs["event"], "covariates": covariates,
            "incomplete": incomplete, "missing": missing[incomplete],
            "complete": int((~absent.any(axis=1)).sum()), "rows": len(absent),
            "fit": {k: kwargs[k] for k in ("strata", "id", "weights") if kwargs.get(k)},
            "ties": s.ties}, ""


def imputation_arguments(snapshot: dict, method: str) -> dict:
    """engine.impute's predictors (and strata) for the design: the complete covariates; the
    strata as SMC-FCS's Cox model's strata, or as chained equations' predictors."""
    predictors = [c for c in snapshot["covariates"] if c not in snapshot["incomplete"]]
    strata = list(snapshot["fit"].get("strata") or [])
    if method == "mice":
        return {"predictors": predictors + strata}
    return {"predictors": predictors, **({"strata": strata} if strata else {})}


class ImputationView(Viewer):
    store = param.ClassSelector(class_=Store)

    def __init__(self, **params):
        super().__init__(**params)
        self.info = markdown(sizing_mode="stretch_width", css_classes=["imputation-info"])
        self.method = pn.widgets.Select(label="Imputation", options=METHODS, width=300)
        self.m = pn.widgets.IntInput(label="Data sets (m)", value=20, start=2, end=200,
                                     width=130)
        self.seed = pn.widgets.IntInput(label="Seed", value=1, start=0, width=110)
        self.compute = pn.widgets.Button(label="Impute and fit", width=160)
        self.compute.on_click(self._on_click)
        self.status = markdown(sizing_mode="stretch_width")
        self.runner = JobRunner(self.status, [self.compute])
        self.summary = markdown(sizing_mode="stretch_width", css_classes=["imputation-summary"])
        self.pooled = table(css_classes=["imputation-table"])
        self.columns = table(css_classes=["imputed-columns"])
        self._pooled, self._columns = while_filled(self.pooled), while_filled(self.columns)
        self._fit = None
        self.computed: dict[str, pd.DataFrame] = {}   # file stem -> the table on screen
        self._used: dict = {}       # the settings of the tables on screen (script_lines)
        self.store.param.watch(lambda *e: self._say(), ["covariates", "model", "penalty",
                                                        "start", "forms", "interactions",
                                                        "cut_points", "strata"])
        self.store.param.watch(self._new_data, "data_version")
        self._say()

    def _new_data(self, *events) -> None:
        """Other data: the last imputation described the data before; it goes."""
        self.computed, self._used = {}, {}
        self.summary.object = self.status.object = ""
        self.pooled.value = self.columns.value = pd.DataFrame()
        self._say()

    def show_fit(self, fit) -> None:
        """The fit shown in Results: its ratios go beside the pooled ones."""
        self._fit = fit
        self._say()

    def _say(self) -> None:
        snapshot, why = design_or_why(self.store)
        self.compute.disabled = bool(why)
        if why:
            self.info.object = why
            return
        counts = ", ".join(f"{c} {int(k)}" for c, k in snapshot["missing"].items())
        self.info.object = (
            f"The Data tab's Cox model of {', '.join(snapshot['covariates'])}, fitted to m "
            f"completed data sets and pooled by Rubin's rules. Missing values: {counts}; "
            f"{snapshot['complete']} of {snapshot['rows']} rows are complete. SMC-FCS draws each value from "
            "its distribution given the other covariates and the outcome under this Cox "
            "model (its strata too); chained equations use the event and its Nelson-Aalen "
            "hazard as predictors, beside the strata columns (simpler, but they pull a large "
            "hazard ratio toward 1). Weights enter the pooled fits, not the imputations.")

    async def _on_click(self, event=None) -> None:
        await self.run()

    async def run(self) -> None:
        """Impute the current design m times, fit each and pool, by the page's job runner."""
        if self.runner.running:
            return
        snapshot, why = design_or_why(self.store)
        if why:
            self.runner.refuse(f"Multiple imputation: {why}")
            return
        method, m, seed, shown = self.method.value, int(self.m.value), int(self.seed.value), \
            self._fit
        how = imputation_arguments(snapshot, method)
        frame = self.store.cohort_frame()     # the data as pressed (with a derived event)

        def work(cancel, progress):
            imp = engine.impute(
                frame, snapshot["time"], snapshot["event"],
                columns=snapshot["incomplete"], method=method, m=m, seed=seed, cancel=cancel,
                progress=lambda done, total: progress(done, total, "imputing"), **how)
            pooled = imp.fit(covariates=snapshot["covariates"], ties=snapshot["ties"],
                             cancel=cancel, progress=lambda done, total: progress(
                                 done, total, "fitting"), **snapshot["fit"])
            return imp, pooled

        def done(result, progress) -> str:
            imp, pooled = result
            table_ = pooled_table(pooled, shown)
            show(self.pooled, table_, 4)
            show(self.columns, imp.summary.reset_index(), 3)
            name = {v: k for k, v in METHODS.items()}[method]
            self.summary.object = (f"**{m} data sets** by {name}, seed {seed}; pooled by "
                                   "Rubin's rules (t limits on Rubin's df; fmi: the fraction "
                                   "of missing information).")
            self.computed = {"multiple_imputation": pooled.summary.reset_index(),
                             "imputed_columns": imp.summary.reset_index()}
            self._used = {**{k: snapshot[k] for k in ("time", "event", "covariates",
                                                      "incomplete", "fit", "ties")},
                          "method": method, "m": m, "seed": seed}
            return f"Multiple imputation done in {progress.elapsed:.2f} s."

        await self.runner.run(work, lambda p: f"{p.note or 'Starting'} … {p.done} of "
                                              f"{p.total} ({p.elapsed:.1f} s)",
                              notice="Multiple imputation", done=done,
                              cancelled=lambda p: "Cancelled; earlier results kept.",
                              thread="survscan-imputation")

    def script_lines(self) -> list[str]:
        """The engine calls that give the tables on screen, for the generated script (after
        its ``df``); none before they are computed."""
        u = self._used
        if not u:
            return []
        how = "".join(f", {k}={v!r}" for k, v in imputation_arguments(u, u["method"]).items())
        extra = "".join(f", {k}={v!r}" for k, v in u["fit"].items())
        return ["", "# Results' Missing data page: imputed m times, each data set fitted, "
                "pooled (Rubin's rules)",
                f"imp = engine.impute(df, {u['time']!r}, {u['event']!r}, "
                f"columns={u['incomplete']!r},",
                f"                    method={u['method']!r}, m={u['m']}, "
                f"seed={u['seed']}{how})",
                f"pooled = imp.fit(covariates={u['covariates']!r}, ties={u['ties']!r}{extra})",
                "print(imp.summary)", "print(pooled.summary)"]

    def files(self) -> dict[str, bytes]:
        """The report folder's pooled table and imputed columns' summary (CSV), once
        computed."""
        return {f"{name}.csv": frame.to_csv(index=False).encode()
                for name, frame in self.computed.items()}

    def __panel__(self):
        return pn.Column(self.info, pn.Row(self.method, self.m, self.seed, self.compute),
                         pn.Row(self.runner.cancel_button, self.runner.progress), self.status,
                         self.summary, self._pooled, "#### The imputed columns",
                         self._columns, sizing_mode="stretch_width")


def pooled_table(pooled, shown=None) -> pd.DataFrame:
    """The pooled hazard ratios, their limits, p and fmi (Rubin's df, often in the millions
    where little is missing, stay in the CSV), and the shown fit's hazard ratio beside them
    when it has the same covariates."""
    s = pooled.summary
    out = pd.DataFrame({"covariate": s.index, "HR": s["hr"].to_numpy(),
                        "lower": s["hr_lower"].to_numpy(), "upper": s["hr_upper"].to_numpy(),
                        "p": s["p"].to_numpy(), "fmi": s["fmi"].to_numpy()})
    if shown is not None and list(shown.summary.index) == list(s.index):
        out[f"{shown.name} HR ({shown.result.n} rows)"] = shown.summary["hr"].to_numpy()
    return out

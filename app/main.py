"""survscan's first page: a bundled sample, its Kaplan-Meier curves and a Cox fit.

Serve it with ``panel serve app/main.py``. Kaplan-Meier comes from lifelines and the Cox fit
from the engine; the page itself only arranges data and results.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable

import holoviews as hv
import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter
from lifelines import KaplanMeierFitter
from panel.viewable import Viewer

from engine import datasets

pn.extension("tabulator", notifications=True)
hv.extension("bokeh")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sample:
    """A bundled sample and the column roles the page uses for it."""

    load: Callable[[], pd.DataFrame]
    about: str
    time: str
    event: str
    group: str
    covariates: tuple[str, ...]
    start: str | None = None
    id: str | None = None


def _mgus2() -> pd.DataFrame:
    """mgus2 with a 0/1 ``male`` column coded from ``sex``."""
    df = datasets.load_mgus2()
    return df.assign(male=(df["sex"] == "M").astype(int))


def _bmtcrr() -> pd.DataFrame:
    """bmtcrr with ``male`` from ``Sex`` and ``failure`` = relapse or death (Status 1 or 2)."""
    df = datasets.load_bmtcrr()
    return df.assign(male=(df["Sex"] == "M").astype(int), failure=(df["Status"] > 0).astype(int))


SAMPLES: dict[str, Sample] = {
    "rossi": Sample(
        datasets.load_rossi,
        "Rossi recidivism: 432 released prisoners, arrest within 52 weeks; curves by financial aid.",
        time="week", event="arrest", group="fin",
        covariates=("fin", "age", "race", "wexp", "mar", "paro", "prio"),
    ),
    "stanford_heart": Sample(
        datasets.load_stanford_heart,
        "Stanford heart transplants: 103 patients in (start, stop] episodes; curves by prior surgery.",
        time="stop", event="event", group="surgery",
        covariates=("age", "year", "surgery", "transplant"), start="start", id="id",
    ),
    "jasa1": Sample(
        datasets.load_jasa1,
        "Stanford heart transplants as in Kalbfleisch & Prentice; curves by prior surgery.",
        time="stop", event="event", group="surgery",
        covariates=("age", "year", "surgery", "transplant"), start="start", id="id",
    ),
    "mgus2": Sample(
        _mgus2,
        "MGUS: 1,384 Mayo Clinic patients, death in months; curves by sex.",
        time="futime", event="death", group="sex", covariates=("age", "male"),
    ),
    "bmtcrr": Sample(
        _bmtcrr,
        "Bone-marrow transplants: 177 patients, relapse or death in months; curves by stem-cell source.",
        time="ftime", event="failure", group="Source", covariates=("Age", "male"),
    ),
}


def kaplan_meier_plot(data: pd.DataFrame, sample: Sample) -> hv.Overlay:
    """Kaplan-Meier curves (lifelines) of ``data``, one per level of the sample's group column.

    Counting-process samples pass their start times as lifelines' ``entry`` (delayed entry).
    """
    curves = []
    for level, rows in data.groupby(sample.group, sort=True):
        label = f"{sample.group} = {level}"
        kmf = KaplanMeierFitter().fit(
            rows[sample.time],
            rows[sample.event],
            entry=None if sample.start is None else rows[sample.start],
            label=label,
        )
        sf = kmf.survival_function_
        curves.append(
            hv.Curve((sf.index, sf[label]), sample.time, "survival", label=label)
            .opts(interpolation="steps-post")
        )
    return hv.Overlay(curves).opts(
        title="Kaplan-Meier", ylim=(0, 1.02), show_grid=True, responsive=True, height=360,
        legend_position="bottom_left",
    )


def fit_cox(data: pd.DataFrame, sample: Sample):
    """Fit a Cox model with Efron ties of the sample's covariates with the engine's public API."""
    import engine  # imported here so the page loads even while the engine cannot

    cohort = engine.Cohort.from_frame(
        data,
        time=sample.time,
        event=sample.event,
        covariates=list(sample.covariates),
        start=sample.start,
        id=sample.id,
    )
    return engine.fit(cohort, model="cox", ties="efron")


class SurvscanPage(Viewer):
    """The page: sample picker, data preview, Kaplan-Meier plot and a Cox (Efron) fit."""

    sample = param.Selector(objects=list(SAMPLES), default="rossi", doc="Bundled sample shown.")

    def __init__(self, **params):
        super().__init__(**params)
        self._data = pd.DataFrame()
        self._about = pn.pane.Markdown()
        self._preview = pn.widgets.Tabulator(
            pd.DataFrame(), disabled=True, show_index=False, pagination="local", page_size=10,
            sizing_mode="stretch_width",
        )
        self._km = pn.pane.HoloViews(sizing_mode="stretch_width", min_height=360)
        self._fit_button = pn.widgets.Button(label="Fit Cox (Efron)", color="primary")
        self._fit_button.on_click(self._fit)
        self._status = pn.pane.Markdown()
        self._result = pn.widgets.Tabulator(
            pd.DataFrame(), disabled=True, visible=False, sizing_mode="stretch_width"
        )
        self._load()

    @param.depends("sample", watch=True)
    def _load(self) -> None:
        """Read the chosen sample and redraw the preview and the Kaplan-Meier plot."""
        sample = SAMPLES[self.sample]
        self._data = sample.load()
        self._about.object = sample.about
        self._preview.value = self._data
        self._km.object = kaplan_meier_plot(self._data, sample)
        self._result.visible = False
        self._status.object = ""

    async def _fit(self, event=None) -> None:
        """Run the Cox fit in a worker thread; show the summary or a notification."""
        name, data = self.sample, self._data
        self._fit_button.loading = True
        self._status.object = f"Fitting Cox (Efron) on **{name}** ..."
        try:
            res = await asyncio.to_thread(fit_cox, data, SAMPLES[name])
        except Exception as exc:  # every failure reaches the user as a message, not a traceback
            log.exception("Cox fit on %s failed", name)
            self._status.object = f"Fit failed: {exc}"
            if pn.state.notifications is not None:
                pn.state.notifications.error(str(exc), duration=0)
        else:
            summary = res.summary
            self._result.formatters = {
                col: NumberFormatter(format="0.000000")
                for col in summary.columns
                if pd.api.types.is_float_dtype(summary[col])
            }
            self._result.value = summary.rename_axis("covariate")
            self._result.visible = True
            state = "converged" if res.converged else "did NOT converge"
            self._status.object = (
                f"Cox (Efron) on **{name}**: {state} after {res.n_iter} iterations, "
                f"log partial likelihood {res.loglik:.4f}."
            )
        finally:
            self._fit_button.loading = False

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            "# survscan",
            pn.widgets.Select.from_param(self.param.sample, name="Sample"),
            self._about,
            self._preview,
            self._km,
            self._fit_button,
            self._status,
            self._result,
            sizing_mode="stretch_width",
            max_width=1100,
        )


def build_page() -> SurvscanPage:
    """Build a fresh page (one per browser session)."""
    return SurvscanPage()


if pn.state.served:
    build_page().servable(title="survscan")

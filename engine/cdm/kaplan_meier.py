"""Kaplan-Meier survival by treatment arm (lifelines), as a table a plot can draw."""
from __future__ import annotations

import pandas as pd
from lifelines import KaplanMeierFitter


def kaplan_meier_by_arm(population: pd.DataFrame, arms=("target", "comparator")) -> pd.DataFrame:
    """arm, time, survival, lower, upper (95% Greenwood-exponential band), at_risk, events,
    censored: one row per distinct time of each arm (``population``: treatment, time, event)."""
    frames = []
    for label, value in zip(arms, (1, 0)):
        rows = population[population["treatment"] == value]
        if rows.empty:
            continue
        km = KaplanMeierFitter().fit(rows["time"], rows["event"], label=label)
        band = km.confidence_interval_survival_function_
        table = km.event_table
        frames.append(pd.DataFrame({
            "arm": label, "time": km.survival_function_.index.to_numpy(),
            "survival": km.survival_function_.iloc[:, 0].to_numpy(),
            "lower": band.iloc[:, 0].to_numpy(), "upper": band.iloc[:, 1].to_numpy(),
            "at_risk": table["at_risk"].to_numpy(), "events": table["observed"].to_numpy(),
            "censored": table["censored"].to_numpy()}))
    return pd.concat(frames, ignore_index=True)

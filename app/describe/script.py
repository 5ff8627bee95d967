"""The Describe tab's analyses as lines of the generated script: Table 1, the survival curves
and their test (or the cumulative incidence and Gray's test), survival at chosen times, the
restricted mean, the incidence rates and their standardisation, with the engine's public API
on the same rows the page describes (describing.groups_of: rows with the time, entry, id,
weights, group and strata present)."""

from __future__ import annotations

from .describing import band_labels

def describe_lines(s: dict) -> list[str]:
    """The lines for the settings ``s`` of DescribeView.script_settings (appended to the
    analysis script, whose ``df`` is the data after the Data tab's steps)."""
    if "error" in s:
        return ["", "", f"# The Describe tab's analyses are not written: {s['error']} (correct "
                "it on the tab)."]
    by = s["group"]
    lines = ["", "", f"# ---- The Describe tab{f' by {by}' if by else ''} "
             + "-" * max(0, 60 - len(by or "")), *_table_one(s), *_rows(s)]
    lines += _incidence(s) if s["competing"] else _kaplan_meier(s)
    return lines + _rates(s) + _standardised(s)


def _table_one(s: dict) -> list[str]:
    t1 = s["table_one"]
    if not t1["columns"]:
        return []
    data = "df"
    lines = []
    if s["start"] and s["id"]:      # one row per subject: its first episode (values at entry)
        lines.append(f"subjects = df.sort_values([{s['id']!r}, {s['start']!r}], "
                     f"kind=\"stable\").drop_duplicates(subset={s['id']!r}).sort_index()")
        data = "subjects"
    if s["group"]:
        data = f"{data}[{data}[{s['group']!r}].notna()]"
    args = [data, *([f"by={s['group']!r}"] if s["group"] else []),
            f"columns={[c for c in t1['columns'] if c != s['group']]!r}"]
    if t1["nonnormal"]:
        args.append(f"nonnormal={t1['nonnormal']!r}")
    if t1["weights"]:
        args.append(f"weights={t1['weights']!r}")
    return lines + [f"table_one = engine.table_one({', '.join(args)})",
                    "print(table_one.table)  # Table 1"]


def _rows(s: dict) -> list[str]:
    """``rows``: the page's rows (time, event, codes, group, strata, start, id, weights) and
    ``described``, their cohort; ``by`` the group of each row."""
    event, numbers = s["event"], f"pd.to_numeric(df[{s['event']!r}], errors=\"coerce\")"
    if s["event_codes"] and not s["fine_gray"]:
        indicator = f"df[{event!r}].isin({s['event_codes']!r}).astype(int)"
    else:
        indicator = f"({numbers}.fillna(0) != 0).astype(int)"
    columns = [f"\"time\": pd.to_numeric(df[{s['time']!r}], errors=\"coerce\")",
               f"\"event\": {indicator}"]
    lines = []
    if s["competing"]:
        lines += [f"codes = {numbers}.fillna(0)"]
        if s["event_codes"]:
            lines += [f"codes = codes.where(codes.isin({[float(c) for c in s['event_codes']]!r}),"
                      " 0)"]
        lines += ["codes = codes.where((codes > 0) & (codes == codes.round()), 0).astype(int)"]
        columns.append("\"codes\": codes")
    if s["group"]:
        group = (f"pd.qcut(df[{s['group']!r}], 4, labels=False, duplicates=\"drop\") + 1"
                 if s["quartiles"] else f"df[{s['group']!r}]")
        columns.append(f"\"group\": {group}")
    if s["strata"]:
        columns.append(f"\"strata\": df[{s['strata']!r}]")
    if s["start"]:
        columns.append(f"\"start\": pd.to_numeric(df[{s['start']!r}], errors=\"coerce\")")
        if s["id"]:
            columns.append(f"\"id\": df[{s['id']!r}]")
    if s["weights"]:
        columns.append(f"\"weights\": pd.to_numeric(df[{s['weights']!r}], errors=\"coerce\")")
    lines += ["rows = pd.DataFrame({" + columns[0] + ",",
              *[f"                     {c}," for c in columns[1:]], "                     })",
              "rows = rows.dropna()  # the rows the tab describes",
              f"described = {_cohort('rows', s)}",
              "by = rows[\"group\"].to_numpy()" if s["group"] else "by = None"]
    return lines


def _cohort(frame: str, s: dict, event: str = "event") -> str:
    roles = [f"{role}={role!r}" for role in ("start", "id", "weights")
             if s[role] and (role != "id" or s["start"])]
    return (f"engine.Cohort.from_frame({frame}, time=\"time\", event={event!r}, covariates=[]"
            + "".join(f", {r}" for r in roles) + ")")


def _kaplan_meier(s: dict) -> list[str]:
    t0, conf = s["start_time"], s["conf_type"]
    lines = [f"km = engine.kaplan_meier(described, by=by, conf_type={conf!r}"
             + (f", start_time={t0!r})" if t0 is not None else ")"),
             f"print(km.quantile([0.5], conf_type={conf!r}))  # median survival"]
    if s["times"]:
        lines.append(f"print(km.at({s['times']!r}, conf_type={conf!r}))  # survival at times")
    if s["tau"]:
        lines.append(f"print(km.rmst({s['tau']!r}))  # restricted mean to tau")
        if s["group"]:
            lines.append(f"print(km.rmst_difference({s['tau']!r}))")
    if s["group"]:
        frame, cohort = "rows", "described"
        if t0 is not None:      # the test of the rows followed to the landmark
            lines.append(f"followed = rows[rows[\"time\"] >= {t0!r}]")
            frame, cohort = "followed", _cohort("followed", s)
        rho, gamma, weighting = s["test"]
        args = [cohort, f"by={frame}[\"group\"].to_numpy()"]
        if s["strata"]:
            args.append(f"strata={frame}[\"strata\"].to_numpy()")
        args += [f"rho={rho!r}", f"gamma={gamma!r}"]
        if weighting:
            args.append(f"weighting={weighting!r}")
        lines += [f"test = engine.logrank_test({', '.join(args)})", "print(test.table)",
                  "print(f\"chi-square = {test.statistic:.4f} on {test.df} df, "
                  "p = {test.p:.4g}\")"]
    return lines


def _incidence(s: dict) -> list[str]:
    cause, t0 = int(s["cause"]), s["start_time"]
    frame = "rows" if t0 is None else f"rows[rows[\"time\"] >= {t0!r}]"
    roles = "".join(f", {r}={r!r}" for r in ("start", "id", "weights") if s[r])
    by = ", by=\"group\"" if s["group"] else ""
    lines = [f"cif = engine.cumulative_incidence({frame}, cause={cause}{by}, time=\"time\", "
             f"event=\"codes\"{roles})", "print(cif)"]
    if s["group"] and not (s["start"] or s["weights"]):
        strata = ", strata=\"strata\"" if s["strata"] else ""
        lines += [f"gray = engine.gray_test({frame}, by=\"group\", cause={cause}{strata}, "
                  "time=\"time\", event=\"codes\")", "print(gray.table)"]
    return lines


def _rates(s: dict) -> list[str]:
    base = "described"
    lines = []
    if s["competing"]:
        lines.append(f"cause_rows = rows.assign(event=(rows[\"codes\"] == {int(s['cause'])})"
                     ".astype(int))")
        base = _cohort("cause_rows", s)
    breaks = f", breaks={s['breaks']!r}" if s["breaks"] else ""
    return lines + [f"rates = engine.incidence_rates({base}, by=by, per={s['per']!r}{breaks})",
                    "print(rates.rates)", "print(rates.comparisons)"]


def _standardised(s: dict) -> list[str]:
    std = s["standardise"]
    if not std:
        return []
    column, bands, unit, standard = std["column"], std["bands"], std["unit"], std["standard"]
    named = standard != "cohort"
    frame = "cause_rows" if s["competing"] else "rows"
    values = f"pd.to_numeric(df[{column!r}], errors=\"coerce\")"
    if unit is None:
        if named:           # ages, placed in the standard's groups by the engine
            strata = f"{values}.loc[{frame}.index]"
        elif bands:
            labels = band_labels(bands)
            edges = ", ".join(["float(\"-inf\")", *map(repr, bands), "float(\"inf\")"])
            strata = (f"pd.cut({values}, [{edges}], labels={labels!r})"
                      f".astype(object).loc[{frame}.index]")
        else:
            strata = f"df[{column!r}].loc[{frame}.index]"
        lines = [f"strata = {strata}", "known = strata.notna().to_numpy()",
                 f"kept = {frame}[known]", "strata = strata[known].to_numpy()"]
        cohort = _cohort("kept", s)
    else:
        limits = (f"engine.standard_population({standard!r})[\"lower\"].tolist()[1:]" if named
                  else repr(bands))
        start = ", start=\"start\"" if s["start"] else ""
        lines = [f"kept = {frame}.assign(scale={values}.loc[{frame}.index])",
                 "kept = kept[kept[\"scale\"].notna()]",
                 *([] if s["start"] and s["id"] else ["kept = kept.assign(id=kept.index)"]),
                 f"kept = engine.split_lexis(kept, \"time\", \"event\", \"scale\", {limits}, "
                 f"unit={unit!r}{start}, band=\"stratum\")  # attained {column}",
                 "strata = kept[\"stratum\"].to_numpy()"]
        cohort = (f"engine.Cohort.from_frame(kept, time=\"time\", event=\"event\", "
                  f"covariates=[], start=\"start\", id=\"id\""
                  + (", weights=\"weights\"" if s["weights"] else "") + ")")
    group = "kept[\"group\"].to_numpy()" if s["group"] else "None"
    return lines + [
        f"kept_cohort = {cohort}",
        f"standardized = engine.standardized_rates(kept_cohort, strata, by={group}, "
        f"per={s['per']!r}, standard={standard!r})",
        "print(standardized.rates)", "print(standardized.comparisons)",
        f"smr = engine.smr(kept_cohort, strata, by={group}"
        + (f", reference_rates={std['reference_rates']!r}, per={s['per']!r}"
           if std["reference_rates"] else "")
        + (f", age_groups={standard!r}" if named else "") + ")", "print(smr.ratios)"]

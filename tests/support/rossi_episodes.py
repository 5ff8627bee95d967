"""rossi's subjects as counting-process episodes, for tests of entry times: each subject's
follow-up cut at weeks 8 and 20, with case weights 1-3 and race as strata; and any frame's
rows cut at given times as R's survSplit cuts them."""
import numpy as np
import pandas as pd


def rossi_episodes(rossi: pd.DataFrame, n: int = 90) -> pd.DataFrame:
    """Episodes (id, start, stop, race, fin, age, prio, arrest, w) of the first ``n``
    subjects: the arrest on the last episode only."""
    rows = []
    for i, r in rossi.iloc[:n].iterrows():
        bounds = [0, *[c for c in (8, 20) if c < r["week"]], r["week"]]
        for a, b in zip(bounds[:-1], bounds[1:]):
            rows.append({"id": i, "start": a, "stop": b, "race": r["race"], "fin": r["fin"],
                         "age": r["age"], "prio": r["prio"],
                         "arrest": int(r["arrest"] and b == r["week"]), "w": 1 + i % 3})
    return pd.DataFrame(rows)


def survsplit(frame: pd.DataFrame, cuts, time: str = "week",
              event: str = "arrest") -> pd.DataFrame:
    """``frame``'s rows cut at the follow-up times ``cuts`` (R's survSplit): a row for each
    band (a, b] a subject reached, with its ``start`` and band number (``band``: 1, 2, ...),
    the event on the band that holds the time."""
    edges = [0.0, *cuts, np.inf]
    parts = []
    for band, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]), start=1):
        part = frame[frame[time] > lo].copy()
        part["start"], part["band"] = lo, band
        part[event] = np.where(part[time] <= hi, part[event], 0)
        part[time] = np.minimum(part[time], hi)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)

"""rossi's subjects as counting-process episodes, for tests of entry times: each subject's
follow-up cut at weeks 8 and 20, with case weights 1-3 and race as strata."""
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

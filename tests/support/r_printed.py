"""Read the sections of an R script's saved output (tests/data/*.Rout): each starts with a line
'## label' and holds what R printed after it, such as a data.frame printed to 15 digits."""
from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "data"


def sections(name: str) -> dict:
    """label -> the lines printed under '## label' in tests/data/``name``."""
    out, label = {}, None
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("## "):
            label = line[3:].strip()
            out[label] = []
        elif label is not None:
            out[label].append(line)
    return out


def data_frame(lines: list) -> pd.DataFrame:
    """A data.frame as R prints it (a header, then rows led by their row names; no spaces
    within values); columns after the first that read as numbers become numbers (NA: NaN)."""
    rows = [line.split()[1:] for line in lines[1:] if line.strip()]
    frame = pd.DataFrame(rows, columns=lines[0].split())
    for column in frame.columns:
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.notna().sum() == frame[column].ne("NA").sum():
            frame[column] = numbers
    return frame

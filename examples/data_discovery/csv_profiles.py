"""Function workers of the data-discovery board: they read the CSV files and write what they
find to the board (as proposals the kernel checks, like any other worker's).

* ``catalog`` (on start): one ``/files`` entry per CSV file of the dataset: its name, row count
  and column names.
* ``profile`` (once per catalogued file): one ``/columns`` entry per column of that file: the
  inferred type, rows, nulls and null rate, distinct values, min and max, the most frequent
  values of a low-cardinality column and the rows per month of a date column.

The dataset directory is the board's ``/dataset`` (an absolute path, or relative to the working
directory); empty means the ``data/`` folder next to this file.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE / "data"

_INT = re.compile(r"^-?[0-9]+$")
_NUM = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_TOP_DISTINCT = 8  # a column with at most this many distinct values gets its most frequent ones
_TOP = 3


def dataset_dir(view: Any) -> Path:
    """The directory the board's ``/dataset`` names (the bundled ``data/`` when it is empty)."""
    text = view.data.get("/dataset")
    return Path(text).expanduser() if isinstance(text, str) and text else DEFAULT_DATA


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of a CSV file."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def catalog(view: Any) -> list[dict[str, Any]]:
    """Append one ``/files`` entry per CSV file of the dataset, in name order."""
    folder = dataset_dir(view)
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"no CSV files in {folder}")
    ops: list[dict[str, Any]] = []
    for path in files:
        header, rows = read_csv(path)
        ops.append(
            {"op": "add", "path": "/files/-", "value": {"name": path.name, "rows": len(rows), "columns": header}}
        )
    return ops


def infer_type(values: list[str]) -> str:
    """integer, number, date (YYYY-MM-DD), string, or empty (no value at all)."""
    if not values:
        return "empty"
    for name, pattern in (("integer", _INT), ("number", _NUM), ("date", _DATE)):
        if all(pattern.match(v) for v in values):
            return name
    return "string"


def profile_column(file: str, name: str, cells: list[str]) -> dict[str, Any]:
    """The profile of one column, given its cells (an empty cell is a null)."""
    values = [c for c in cells if c.strip() != ""]
    kind = infer_type(values)
    nulls = len(cells) - len(values)
    profile: dict[str, Any] = {
        "id": f"{file}:{name}",
        "file": file,
        "name": name,
        "type": kind,
        "rows": len(cells),
        "nulls": nulls,
        "null_rate": round(nulls / len(cells), 4) if cells else 0.0,
        "distinct": len(set(values)),
    }
    if kind in ("integer", "number"):
        numbers = [float(v) for v in values]
        low, high = min(numbers), max(numbers)
        profile["min"] = int(low) if kind == "integer" else low
        profile["max"] = int(high) if kind == "integer" else high
    elif values:
        profile["min"], profile["max"] = min(values), max(values)
    if kind == "date":
        months = Counter(v[:7] for v in values)
        profile["by_month"] = dict(sorted(months.items()))
    elif kind == "string" and len(set(values)) <= _TOP_DISTINCT:
        profile["top"] = [{"value": v, "count": n} for v, n in Counter(values).most_common(_TOP)]
    return profile


def profile(view: Any, event: Any) -> list[dict[str, Any]]:
    """Append the column profiles of the file whose catalogue entry woke this worker."""
    path = event.get("path", "") if isinstance(event, dict) else ""
    index = path.rsplit("/", 1)[-1]
    files = view.data.get("/files")
    if not isinstance(files, list) or not index.isdigit() or int(index) >= len(files):
        raise LookupError(f"the triggering event {path!r} names no catalogued file")
    entry = files[int(index)]
    header, rows = read_csv(dataset_dir(view) / entry["name"])
    return [
        {
            "op": "add",
            "path": "/columns/-",
            "value": profile_column(entry["name"], column, [r[column] or "" for r in rows]),
        }
        for column in header
    ]

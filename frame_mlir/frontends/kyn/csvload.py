"""The `.kyn` CSV connector: read a CSV file into encoded, split, normalised arrays.

Self-contained (Python stdlib and numpy only, no top-level side effects): the native
trainer imports it, and the PyTorch script that `frame-kyn compile` writes embeds this
source verbatim, so both read the data through the very same code.

Semantics (docs/kyn.md, "Data (the CSV connector)"):
- The file is parsed by the `csv` module; the first non-blank row is the header. Cells
  are stripped of surrounding whitespace; blank lines are skipped. A row with the wrong
  number of cells, or an empty cell, is an error naming its line and column.
- The target column is removed, then the features are encoded the way
  `pandas.get_dummies(drop_first=False)` does: a column whose every value parses as a
  float stays numeric; any other column becomes one-hot columns named `<col>_<value>`,
  categories sorted, placed after all numeric columns in column order. A non-finite
  number (`nan`, `inf`) in a numeric column is an error.
- Split: `numpy.random.RandomState(seed).permutation(n)`; the first `floor(n * split)`
  indices (in permutation order) train, the rest are held out. Both must be non-empty.
- Normalise: z-score with the training split's mean and population std (ddof=0), as
  scikit-learn's StandardScaler; a constant column is divided by 1.
- Targets: "classification" -> int64 labels 0..K-1 of the sorted distinct values
  (numbers sorted numerically, text as text); "binary" -> float32 [n, 1] of 0/1 (a
  numeric target must be all 0/1, a text target must have exactly two values, sorted to
  0/1); "regression" -> float32 [n, 1], numeric target required.

Errors are `CsvDataError`s reading `<path>:<line>: <what>` (line 1 is the header) or
`<path>: <what>`.
"""

import csv
import difflib
import hashlib
import math
import os
import stat

import numpy as np

__all__ = ["CsvDataError", "file_sha256", "load_csv_dataset"]

TASKS = ("classification", "binary", "regression")


class CsvDataError(ValueError):
    """A CSV file that cannot be read as the dataset asks: `<path>[:<line>]: <what>`."""


def _open_data(path: str, mode: str, **kwargs) -> object:
    """open() for reading the data file, which must be a regular file: a device never
    ends (`/dev/zero`), a FIFO blocks. The script's twin of frame-mlir's one check,
    `frame_mlir.fileio.open_regular` (this module runs without frame-mlir there; the
    native trainer checks with fileio before it calls this module)."""
    mode_bits = os.stat(path).st_mode
    if not stat.S_ISREG(mode_bits):
        kind = next((k for test, k in ((stat.S_ISDIR, "a directory"),
                                        (stat.S_ISCHR, "a character device"),
                                        (stat.S_ISBLK, "a block device"),
                                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
                     if test(mode_bits)), "a file of unknown type")
        raise CsvDataError(f"{path}: expected a regular file, found {kind}")
    return open(path, mode, **kwargs)


def file_sha256(path: str) -> str | None:
    """SHA-256 hex digest of the file at `path` (read in 64 KiB chunks); None when the
    file is missing, unreadable or not a regular file."""
    digest = hashlib.sha256()
    try:
        with _open_data(path, "rb") as f:
            for chunk in iter(lambda: f.read(65536), b""):
                digest.update(chunk)
    except (OSError, CsvDataError):
        return None
    return digest.hexdigest()


def _read_rows(path: str) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, data rows (stripped cells) and each row's 1-based starting line."""
    header: list[str] | None = None
    header_line = 1
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        with _open_data(path, "r", newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            start = 1
            for row in reader:
                line, start = start, reader.line_num + 1
                cells = list(map(str.strip, row))
                if not cells or (len(cells) == 1 and not cells[0]):
                    continue  # blank line
                if header is None:
                    header, header_line = cells, line
                    _check_header(path, header, header_line)
                    continue
                if len(cells) != len(header):
                    raise CsvDataError(
                        f"{path}:{line}: expected {len(header)} cells (as in the header), "
                        f"found {len(cells)}")
                if "" in cells:
                    col = cells.index("")
                    raise CsvDataError(
                        f"{path}:{line}: empty cell in column '{header[col]}' "
                        f"(column {col + 1}); missing values are not supported")
                rows.append(cells)
                lines.append(line)
    except FileNotFoundError:
        raise CsvDataError(f"{path}: file not found") from None
    except UnicodeDecodeError as e:
        raise CsvDataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise CsvDataError(f"{path}:{reader.line_num}: malformed CSV: {e}") from None
    except OSError as e:
        raise CsvDataError(f"{path}: cannot read: {e.strerror or e}") from None
    if header is None:
        raise CsvDataError(f"{path}: empty file; expected a header row of column names")
    if not rows:
        raise CsvDataError(f"{path}: no data rows after the header (line {header_line})")
    return header, rows, lines


def _check_header(path: str, header: list[str], line: int) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if not name:
            raise CsvDataError(f"{path}:{line}: column {i + 1} of the header has no name")
        if name in seen:
            raise CsvDataError(f"{path}:{line}: duplicate column name '{name}' "
                               f"(columns {seen[name] + 1} and {i + 1})")
        seen[name] = i


def _as_float(values: tuple[str, ...]) -> np.ndarray | None:
    """The column as float64 when every value parses as a Python float, else None."""
    try:
        return np.fromiter(map(float, values), dtype=np.float64, count=len(values))
    except ValueError:
        return None


def _categories(values: tuple[str, ...]) -> tuple[list[str], np.ndarray]:
    """The sorted distinct values and each value's index among them."""
    cats = sorted(set(values))
    index = {c: i for i, c in enumerate(cats)}
    return cats, np.fromiter(map(index.__getitem__, values), dtype=np.int64,
                             count=len(values))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_finite(path: str, name: str, raw: tuple[str, ...], num: np.ndarray,
                  lines: list[int]) -> None:
    bad = np.flatnonzero(~np.isfinite(num))
    if bad.size:
        i = int(bad[0])
        raise CsvDataError(f"{path}:{lines[i]}: column '{name}': expected a finite number, "
                           f"found '{raw[i]}'")


def _class_name(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _encode_target(path: str, name: str, raw: tuple[str, ...], lines: list[int],
                   task: str) -> tuple[np.ndarray, list[str] | None]:
    num = _as_float(raw)
    if num is not None:
        _check_finite(path, name, raw, num, lines)
    if task == "regression":
        if num is None:
            i = next(i for i, v in enumerate(raw) if not _is_number(v))
            raise CsvDataError(f"{path}:{lines[i]}: target column '{name}' must be numeric "
                               f"for a regression loss, found '{raw[i]}'")
        return num.astype(np.float32).reshape(-1, 1), None
    if task == "binary":
        if num is not None:
            bad = np.flatnonzero((num != 0.0) & (num != 1.0))
            if bad.size:
                i = int(bad[0])
                raise CsvDataError(
                    f"{path}:{lines[i]}: target column '{name}' must be 0 or 1 for bce, "
                    f"found '{raw[i]}'")
            return num.astype(np.float32).reshape(-1, 1), None
        classes, codes = _categories(raw)
        if len(classes) != 2:
            shown = ", ".join(f"'{c}'" for c in classes[:5]) + (", ..." if len(classes) > 5
                                                                   else "")
            raise CsvDataError(f"{path}: target column '{name}' must have exactly 2 distinct "
                               f"values for bce, found {len(classes)}: {shown}")
        return codes.astype(np.float32).reshape(-1, 1), classes
    if num is not None:
        values, codes = np.unique(num, return_inverse=True)
        names = [_class_name(float(v)) for v in values]
    else:
        names, codes = _categories(raw)
    return codes.astype(np.int64).reshape(-1), names


def load_csv_dataset(path: str, target: str, split: float, normalize: bool, seed: int,
                     task: str) -> dict:
    """Read `path`, encode its features, split and (optionally) normalise them.

    `task` is "classification", "binary" or "regression". Returns a dict with
    `x_train`, `x_test` (float32 [n, f], C-contiguous), `y_train`, `y_test` (int64 [n]
    for classification, float32 [n, 1] otherwise), `feature_names` (encoded column
    names), `classes` (class names, or None for regression and numeric 0/1 binary
    targets) and `n_rows`. Raises `CsvDataError` on anything the data cannot satisfy.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, not {task!r}")
    if not 0.0 < split < 1.0:
        raise CsvDataError(f"{path}: split must be between 0 and 1 (exclusive), got {split}")
    header, rows, lines = _read_rows(path)
    if target not in header:
        cols = ", ".join(header)
        hint = [c for c in header if c.lower() == target.lower()]
        hint = hint or difflib.get_close_matches(target, header, n=1)
        more = f"; did you mean '{hint[0]}'?" if hint else ""
        raise CsvDataError(f"{path}: target column '{target}' not found; "
                           f"columns are: {cols}{more}")
    if len(header) < 2:
        raise CsvDataError(f"{path}: no feature columns besides the target '{target}'")

    n = len(rows)
    columns = list(zip(*rows, strict=True))
    del rows
    y, classes = _encode_target(path, target, columns[header.index(target)], lines, task)

    numeric: list[tuple[str, np.ndarray]] = []
    onehot: list[tuple[str, list[str], np.ndarray]] = []
    for name, raw in zip(header, columns, strict=True):
        if name == target:
            continue
        num = _as_float(raw)
        if num is not None:
            _check_finite(path, name, raw, num, lines)
            numeric.append((name, num))
        else:
            cats, codes = _categories(raw)
            onehot.append((name, cats, codes))
    feature_names = [name for name, _ in numeric]
    feature_names += [f"{name}_{c}" for name, cats, _ in onehot for c in cats]
    x = np.empty((n, len(feature_names)), dtype=np.float64)
    for j, (_, num) in enumerate(numeric):
        x[:, j] = num
    j = len(numeric)
    for _, cats, codes in onehot:
        x[:, j:j + len(cats)] = codes[:, None] == np.arange(len(cats))
        j += len(cats)

    n_train = math.floor(n * split)
    if n_train == 0 or n_train == n:
        side = "training" if n_train == 0 else "held-out"
        raise CsvDataError(f"{path}: split = {split} of {n} rows leaves the {side} split "
                           f"empty ({n_train} training rows, {n - n_train} held out)")
    perm = np.random.RandomState(seed).permutation(n)
    train, test = perm[:n_train], perm[n_train:]
    x_train, x_test = x[train], x[test]
    if normalize:
        mean = x_train.mean(axis=0)
        std = x_train.std(axis=0)
        constant = x_train.max(axis=0) == x_train.min(axis=0)
        mean[constant] = x_train[0, constant]
        std[constant] = 1.0
        x_train = (x_train - mean) / std
        x_test = (x_test - mean) / std
    return {
        "x_train": np.ascontiguousarray(x_train, dtype=np.float32),
        "y_train": np.ascontiguousarray(y[train]),
        "x_test": np.ascontiguousarray(x_test, dtype=np.float32),
        "y_test": np.ascontiguousarray(y[test]),
        "feature_names": feature_names,
        "classes": classes,
        "n_rows": n,
    }

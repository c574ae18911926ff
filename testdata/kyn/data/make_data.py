"""Write the example CSV datasets of testdata/kyn/ from scikit-learn's bundled copies.

    .venv/bin/python testdata/kyn/data/make_data.py [--out DIR]

writes diabetes.csv, breast_cancer.csv, iris.csv and wine.csv into DIR (default: the
folder of this script). The output is deterministic: scikit-learn ships these datasets
as files, values are written in their shortest round-trip form (`repr`, integral values
without `.0`) and lines end in `\\n`. README.md describes each file.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def column_name(name: str) -> str:
    """sklearn's feature name as a CSV/identifier-friendly one: lowercase, each run of
    characters other than letters and digits (spaces, parentheses, '/') becomes `_`."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_")


def number(value: float) -> str:
    """`value` in its shortest exact round-trip form; integral values without `.0`."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _table(data: np.ndarray, names: Sequence[str], target: str,
           labels: Sequence[str]) -> str:
    lines = [",".join([*(column_name(n) for n in names), target])]
    for row, label in zip(data, labels, strict=True):
        lines.append(",".join([*(number(v) for v in row), label]))
    return "\n".join(lines) + "\n"


def diabetes() -> str:
    """442 patients, 10 baseline variables (unscaled), target: disease progression one
    year later (regression)."""
    from sklearn.datasets import load_diabetes

    b = load_diabetes(scaled=False)
    return _table(b.data, b.feature_names, "progression", [number(t) for t in b.target])


def breast_cancer() -> str:
    """569 tumours, 30 features, target `malignant`: 1 = malignant, 0 = benign (sklearn's
    own target is the opposite: 0 = malignant)."""
    from sklearn.datasets import load_breast_cancer

    b = load_breast_cancer()
    assert list(b.target_names) == ["malignant", "benign"]
    return _table(b.data, b.feature_names, "malignant",
                  ["1" if t == 0 else "0" for t in b.target])


def iris() -> str:
    """150 flowers, 4 measurements in cm, target `species`: setosa/versicolor/virginica."""
    from sklearn.datasets import load_iris

    b = load_iris()
    return _table(b.data, b.feature_names, "species", [str(b.target_names[t]) for t in b.target])


def wine() -> str:
    """178 wines, 13 chemical measurements, target `cultivar`: class_0/class_1/class_2."""
    from sklearn.datasets import load_wine

    b = load_wine()
    return _table(b.data, b.feature_names, "cultivar", [str(b.target_names[t]) for t in b.target])


DATASETS: dict[str, Callable[[], str]] = {
    "diabetes.csv": diabetes,
    "breast_cancer.csv": breast_cancer,
    "iris.csv": iris,
    "wine.csv": wine,
}


def generate(out_dir: str) -> list[str]:
    """Write every dataset into `out_dir`; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for filename, make in DATASETS.items():
        path = os.path.join(out_dir, filename)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(make())
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE, help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The `.kyn` CSV connector (frame_mlir/frontends/kyn/csvload.py) and the example datasets."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import math
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.frontends.kyn import csvload
from frame_mlir.frontends.kyn.csvload import CsvDataError, file_sha256, load_csv_dataset

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "testdata" / "kyn" / "data"

# Whitespace around cells is stripped; a blank line is skipped.
MIXED = """\
x1, color ,flag,x2,label
1.5,red,True,10,b
-2,blue,False,20,a

0.25, green ,True,-30,c
4e1,red,False,5.5,a
3,blue,True,0,b
7,green,False,1,c
"""
# Rows of MIXED encoded by hand: x1, x2, then color_{blue,green,red}, flag_{False,True}.
MIXED_X = np.array([
    [1.5, 10, 0, 0, 1, 0, 1],
    [-2, 20, 1, 0, 0, 1, 0],
    [0.25, -30, 0, 1, 0, 0, 1],
    [40, 5.5, 0, 0, 1, 1, 0],
    [3, 0, 1, 0, 0, 0, 1],
    [7, 1, 0, 1, 0, 1, 0],
])
MIXED_NAMES = ["x1", "x2", "color_blue", "color_green", "color_red", "flag_False", "flag_True"]


def write(tmp_path: Path, text: str, name: str = "d.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def load(path: str, target: str = "label", split: float = 0.5, normalize: bool = False,
         seed: int = 0, task: str = "classification") -> dict:
    return load_csv_dataset(path, target, split, normalize, seed, task)


def unsplit(d: dict, seed: int, key: str = "x") -> np.ndarray:
    """Undo the split: the rows in file order."""
    both = np.concatenate([d[f"{key}_train"], d[f"{key}_test"]])
    out = np.empty_like(both)
    out[np.random.RandomState(seed).permutation(len(both))] = both
    return out


# --------------------------------------------------------------------- encoding

def test_encoding_order_and_one_hot(tmp_path: Path) -> None:
    d = load(write(tmp_path, MIXED), seed=3)
    assert d["feature_names"] == MIXED_NAMES
    assert d["n_rows"] == 6
    for key in ("x_train", "x_test"):
        assert d[key].dtype == np.float32 and d[key].flags["C_CONTIGUOUS"]
        assert d[key].shape[1] == 7
    np.testing.assert_array_equal(unsplit(d, 3), MIXED_X.astype(np.float32))
    assert d["classes"] == ["a", "b", "c"]
    np.testing.assert_array_equal(unsplit(d, 3, "y"), [1, 0, 2, 0, 1, 2])


def test_matches_pandas_get_dummies(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = write(tmp_path, MIXED)
    # pandas reads True/False as a bool column, which get_dummies leaves alone; our
    # connector (docs/kyn.md) one-hot encodes it like a string column.
    df = pd.read_csv(path, skipinitialspace=True, dtype={"flag": str})
    df.columns = [c.strip() for c in df.columns]
    df["color"] = df["color"].str.strip()
    want = pd.get_dummies(df.drop(columns=["label"]), drop_first=False)
    d = load(path, seed=1)
    assert d["feature_names"] == list(want.columns)
    np.testing.assert_array_equal(unsplit(d, 1), want.to_numpy(dtype=np.float32))


def test_no_categorical_columns_and_target_in_the_middle(tmp_path: Path) -> None:
    d = load(write(tmp_path, "a,y,b\n1,0.5,2\n3,1.5,4\n5,2.5,6\n"), target="y",
             split=0.5, task="regression")
    assert d["feature_names"] == ["a", "b"]
    np.testing.assert_array_equal(unsplit(d, 0), [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [[0.5], [1.5], [2.5]])


# ------------------------------------------------------------ split, normalize

def test_split_sizes_and_determinism(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i % 2}\n" for i in range(10))
    path = write(tmp_path, "v,label\n" + rows)
    a = load(path, split=0.75, seed=5)
    assert len(a["x_train"]) == 7 and len(a["x_test"]) == 3  # floor(7.5) = 7
    perm = np.random.RandomState(5).permutation(10)
    np.testing.assert_array_equal(a["x_train"][:, 0], perm[:7])  # permutation order
    np.testing.assert_array_equal(a["x_test"][:, 0], perm[7:])
    np.testing.assert_array_equal(a["y_train"], perm[:7] % 2)
    b = load(path, split=0.75, seed=5)
    for key in ("x_train", "x_test", "y_train", "y_test"):
        np.testing.assert_array_equal(a[key], b[key])
    c = load(path, split=0.75, seed=6)
    assert not np.array_equal(a["x_train"], c["x_train"])
    # floor(n * split) as floats compute it: 150 * 0.7 = 105.00000000000001 -> 105.
    rows = "".join(f"{i},{i % 3}\n" for i in range(150))
    d = load(write(tmp_path, "v,label\n" + rows, "150.csv"), split=0.7)
    assert (len(d["x_train"]), len(d["x_test"])) == (math.floor(150 * 0.7), 45)


def test_normalize_matches_standard_scaler(tmp_path: Path) -> None:
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    rng = np.random.RandomState(0)
    lines = ["a,b,const,cat,label"]
    for _ in range(40):
        lines.append(f"{rng.normal(5, 3)!r},{rng.uniform(-1e3, 1e3)!r},0.1,"
                     f"{rng.choice(['p', 'q'])},{rng.randint(3)}")
    path = write(tmp_path, "\n".join(lines) + "\n")
    raw = load(path, split=0.7, seed=2)
    norm = load(path, split=0.7, seed=2, normalize=True)
    scaler = preprocessing.StandardScaler().fit(raw["x_train"].astype(np.float64))
    np.testing.assert_allclose(norm["x_train"], scaler.transform(raw["x_train"]), atol=1e-5)
    np.testing.assert_allclose(norm["x_test"], scaler.transform(raw["x_test"]), atol=1e-5)
    # the constant column is divided by 1: exactly zero, no blow-up
    assert np.all(norm["x_train"][:, 2] == 0) and np.all(norm["x_test"][:, 2] == 0)
    np.testing.assert_allclose(norm["x_train"].mean(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(norm["x_train"][:, [0, 1, 3, 4]].std(axis=0), 1, atol=1e-5)
    assert norm["x_train"].dtype == np.float32 and norm["x_test"].flags["C_CONTIGUOUS"]


# ------------------------------------------------------------------- targets

def test_classification_labels(tmp_path: Path) -> None:
    # a numeric target sorts numerically (9 < 10 < 100), not as text
    d = load(write(tmp_path, "x,label\n1,10\n2,9\n3,100\n4,9\n"), split=0.5)
    assert d["classes"] == ["9", "10", "100"]
    assert d["y_train"].dtype == np.int64 and d["y_train"].ndim == 1
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [1, 0, 2, 0])
    d = load(write(tmp_path, "x,label\n1,0.5\n2,2\n3,-1\n4,2.0\n", "f.csv"), split=0.5)
    assert d["classes"] == ["-1", "0.5", "2"]
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [1, 2, 0, 2])
    # text sorts as text
    d = load(write(tmp_path, "x,label\n1,b\n2,B\n3,a\n4,b\n", "t.csv"), split=0.5)
    assert d["classes"] == ["B", "a", "b"]
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [2, 0, 1, 2])


def test_binary_labels(tmp_path: Path) -> None:
    d = load(write(tmp_path, "x,label\n1,1\n2,0\n3,0.0\n4,1\n"), task="binary")
    assert d["classes"] is None
    assert d["y_train"].dtype == np.float32 and d["y_train"].shape == (2, 1)
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [[1], [0], [0], [1]])
    d = load(write(tmp_path, "x,label\n1,yes\n2,no\n3,no\n4,yes\n", "t.csv"), task="binary")
    assert d["classes"] == ["no", "yes"]
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [[1], [0], [0], [1]])


def test_regression_target(tmp_path: Path) -> None:
    d = load(write(tmp_path, "x,label\n1,1.5\n2,-3\n3,1e2\n4,7\n"), task="regression")
    assert d["classes"] is None
    assert d["y_test"].dtype == np.float32 and d["y_test"].shape == (2, 1)
    np.testing.assert_array_equal(unsplit(d, 0, "y"), [[1.5], [-3], [100], [7]])


# -------------------------------------------------------------------- errors

def error(path: str, **kw: object) -> str:
    with pytest.raises(CsvDataError) as info:
        load(path, **kw)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.csv")
    assert error(path) == f"{path}: file not found"


def test_missing_target_suggests(tmp_path: Path) -> None:
    path = write(tmp_path, "area,rooms,prices\n1,2,3\n")
    msg = error(path, target="price", task="regression")
    assert msg == (f"{path}: target column 'price' not found; columns are: area, rooms, "
                   f"prices; did you mean 'prices'?")
    assert error(path, target="Rooms").endswith("did you mean 'rooms'?")
    assert error(path, target="zzz").endswith("columns are: area, rooms, prices")


def test_ragged_row_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,label\n1,2,x\n\n3,4\n")
    assert error(path) == f"{path}:4: expected 3 cells (as in the header), found 2"
    path = write(tmp_path, "a,b,label\n1,2,x,9\n", "long.csv")
    assert error(path) == f"{path}:2: expected 3 cells (as in the header), found 4"


def test_empty_cell_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,label\n1,2,x\n3, ,y\n")
    assert error(path) == (f"{path}:3: empty cell in column 'b' (column 2); "
                           f"missing values are not supported")


def test_non_finite_number(tmp_path: Path) -> None:
    path = write(tmp_path, "a,b,label\n1,2,x\n3,inf,y\n")
    assert error(path) == f"{path}:3: column 'b': expected a finite number, found 'inf'"
    path = write(tmp_path, "a,label\n1,2\n3,nan\n", "t.csv")
    assert error(path, task="regression") == (
        f"{path}:3: column 'label': expected a finite number, found 'nan'")


def test_regression_needs_numeric_target(tmp_path: Path) -> None:
    path = write(tmp_path, "a,label\n1,2.5\n2,3\n3,high\n")
    assert error(path, task="regression") == (
        f"{path}:4: target column 'label' must be numeric for a regression loss, "
        f"found 'high'")


def test_binary_target_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "a,label\n1,a\n2,b\n3,c\n4,a\n")
    assert error(path, task="binary") == (
        f"{path}: target column 'label' must have exactly 2 distinct values for bce, "
        f"found 3: 'a', 'b', 'c'")
    path = write(tmp_path, "a,label\n1,0\n2,1\n3,2\n", "n.csv")
    assert error(path, task="binary") == (
        f"{path}:4: target column 'label' must be 0 or 1 for bce, found '2'")


def test_split_leaving_an_empty_side(tmp_path: Path) -> None:
    path = write(tmp_path, "a,label\n1,x\n2,y\n3,x\n")
    assert error(path, split=0.2) == (
        f"{path}: split = 0.2 of 3 rows leaves the training split empty "
        f"(0 training rows, 3 held out)")
    assert "between 0 and 1" in error(path, split=1.0)


def test_header_and_empty_file_errors(tmp_path: Path) -> None:
    assert error(write(tmp_path, "\n\n")).endswith(": empty file; expected a header row "
                                                   "of column names")
    assert error(write(tmp_path, "a,label\n", "h.csv")).endswith(
        ": no data rows after the header (line 1)")
    assert error(write(tmp_path, "a,a,label\n1,2,x\n", "d.csv")).endswith(
        ":1: duplicate column name 'a' (columns 1 and 2)")
    assert error(write(tmp_path, "a,,label\n1,2,x\n", "e.csv")).endswith(
        ":1: column 2 of the header has no name")
    assert error(write(tmp_path, "label\nx\ny\n", "o.csv")).endswith(
        ": no feature columns besides the target 'label'")
    with pytest.raises(ValueError, match="task must be one of"):
        load(write(tmp_path, MIXED, "m.csv"), task="ranking")


def test_utf8_bom_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffa,label\n1,x\n2,y\n".encode())
    assert load(str(path))["feature_names"] == ["a"]


# --------------------------------------------------------------------- hashing

def test_file_sha256(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000  # 256 000 bytes: several 64 KiB chunks
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_sha256(str(path)) == hashlib.sha256(data).hexdigest()
    assert file_sha256(str(tmp_path / "missing.csv")) is None
    assert file_sha256(str(tmp_path)) is None  # a folder is unreadable as a file


# ---------------------------------------------------------- self-containedness

def test_source_is_self_contained() -> None:
    """The generated PyTorch scripts embed this source verbatim."""
    source = inspect.getsource(csvload)
    tree = ast.parse(source)
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    assert modules <= {"csv", "difflib", "hashlib", "math", "numpy", "os", "stat"}, modules
    assert ast.get_docstring(tree)
    namespace: dict = {}
    exec(compile("x = 1\n" + source, "<embedded>", "exec"), namespace)
    assert namespace["load_csv_dataset"] and namespace["CsvDataError"]


# ------------------------------------------------------------ example datasets

@pytest.mark.parametrize("name,target,task,n_rows,n_features,classes", [
    ("diabetes", "progression", "regression", 442, 10, None),
    ("breast_cancer", "malignant", "binary", 569, 30, None),
    ("iris", "species", "classification", 150, 4, ["setosa", "versicolor", "virginica"]),
    ("wine", "cultivar", "classification", 178, 13, ["class_0", "class_1", "class_2"]),
])
def test_example_datasets_load(name: str, target: str, task: str, n_rows: int,
                               n_features: int, classes: list[str] | None) -> None:
    d = load_csv_dataset(str(DATA / f"{name}.csv"), target, 0.8, True, 0, task)
    assert d["n_rows"] == n_rows and d["classes"] == classes
    assert d["x_train"].shape == (math.floor(n_rows * 0.8), n_features)
    assert f"input {n_features}\n" in (DATA.parent / f"{name}.kyn").read_text()


def test_committed_csvs_match_make_data(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("kyn_make_data", DATA / "make_data.py")
    assert spec and spec.loader
    make_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_data)
    written = make_data.generate(str(tmp_path))
    assert sorted(Path(p).name for p in written) == sorted(
        p.name for p in DATA.glob("*.csv"))
    for p in written:
        committed = DATA / Path(p).name
        assert Path(p).read_bytes() == committed.read_bytes(), (
            f"{committed} differs from what make_data.py writes; regenerate it with "
            f"'.venv/bin/python testdata/kyn/data/make_data.py'")


@pytest.mark.parametrize(("path", "found"), [("/dev/zero", "a character device"),
                                             ("{tmp}", "a directory")])
def test_data_file_must_be_regular(tmp_path: Path, path: str, found: str) -> None:
    """Issue 30: the embedded connector (the PyTorch script's reader) refuses a device or
    folder before reading it; `/dev/zero` used to spin forever."""
    path = path.format(tmp=tmp_path)
    with pytest.raises(CsvDataError, match=f"^{path}: expected a regular file, found {found}$"):
        load_csv_dataset(path, "y", 0.8, False, 0, "regression")
    assert file_sha256(path) is None

"""The v0 JSON model spec (`schema_v0.json`): the reader and its checks (`spec_v0.py`),
the validated model (`spec.py`), its lowering to frame IR (`lower.py`), the initial
values (`initial_values.py`), the fixed-batch trainer (`trainer.py`), its
data-parallel step (`data_parallel.py`) and its standalone C++ program
(`program.py`)."""

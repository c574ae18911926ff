"""What the compiler targets, below the passes and the backends that read it: the host
CPU's features, vector width and caches (`host.py`), and the arith / math ops that are
one LLVM op or intrinsic, or one C++ expression (`op_tables.py`)."""

"""C++ source backend: the loop-level IR as a standalone C++17 training program.

`emitter.emit_module` translates a `loops`-stage module with one emission rule per op
(`emitter.EMIT_RULES`); `program.emit_program` lowers a spec through the shared pipeline
and writes `main.cpp` (kernels, the static arena, the project random source, the
training loop) and `CMakeLists.txt` (see `cmake.py`).
"""

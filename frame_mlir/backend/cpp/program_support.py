"""What the standalone C++ training programs of every frontend share beside the
emitted kernels: the project random source and the `.dlp` weights writer as C++ text,
the base of the writers of `main()`, and the output folder's checks.
`frontends/spec/program.py` (v0 specs) and `frontends/network/program.py` (JSON
networks) write the rest: their own `main()`, usage text and initial values."""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from math import prod
from pathlib import Path

from frame_mlir.backend.abi import FunctionSignature
from frame_mlir.backend.cpp.emitter import CppEmitError, CppModule, Namer

__all__ = ["DLP_SUPPORT", "RANDOM_SUPPORT", "MainWriterBase", "prepare_out_dir",
           "size_expr", "tensors_dlp_header"]


def size_expr(shape: tuple[int, ...]) -> str:
    """`8 * 4`: the element count, written so the shape stays visible."""
    return " * ".join(str(d) for d in shape) if shape else "1"


RANDOM_SUPPORT = """\
// The project's random source (frame_mlir/runtime/random.py, the single definition):
// one std::mt19937 output per float, mapped in float arithmetic exactly as written
// there. Not std::uniform_real_distribution: standard libraries implement it differently.
static void fill_uniform(std::mt19937& engine, float* dst, std::size_t n, float lo,
                         float hi) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t u = static_cast<std::uint32_t>(engine());
    float c = static_cast<float>(u) / 4294967296.0f;
    if (c >= 1.0f) c = std::nextafter(1.0f, 0.0f);  // u near 2^32 rounds up to 1.0f
    dst[i] = c * (hi - lo) + lo;  // two roundings: built with -ffp-contract=off
  }
}

"""

DLP_SUPPORT = """\
// Writes `count` float32 tensors as a dlprimitives .dlp weights file: b"DLPW", the
// header's length (uint32, big-endian), the JSON header naming each tensor's shape and
// byte range, then the tensors' values (little-endian), in the header's order. Written
// to FILE.tmp and renamed, so a failed write leaves no partial FILE. Returns false, with
// errno set, on failure.
static bool frame_write_dlp(const std::string& path, const char* header,
                            std::uint32_t header_size, const float* const* tensors,
                            const std::size_t* sizes, std::size_t count) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return false;
  unsigned char length[4];
  for (int b = 0; b < 4; ++b) length[b] = static_cast<unsigned char>(header_size >> (24 - 8 * b));
  bool ok = std::fwrite("DLPW", 1, 4, f) == 4 && std::fwrite(length, 1, 4, f) == 4 &&
            std::fwrite(header, 1, header_size, f) == header_size;
  std::vector<unsigned char> bytes;
  for (std::size_t t = 0; ok && t < count; ++t) {
    bytes.resize(sizes[t] * 4);
    for (std::size_t i = 0; i < sizes[t]; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, &tensors[t][i], 4);
      for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<unsigned char>(bits >> (8 * b));
    }
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  }
  const int saved = errno;
  ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  const int failed = errno != 0 ? errno : saved;
  std::remove(tmp.c_str());
  errno = failed;
  return false;
}
"""


class MainWriterBase:
    """What the writers of a program's `main()` share: the lines, local names that
    miss the kernels', helpers' and `reserved` names, and the public functions' C++
    names and signatures."""

    def __init__(self, signatures: Mapping[str, FunctionSignature], cpp: CppModule,
                 reserved: set[str]) -> None:
        self.signatures = signatures
        self.cpp = cpp
        taken = {i.cpp_name for i in cpp.info.values()} | set(cpp.helpers)
        self.names = Namer(taken | reserved | {"main", "argc", "argv"})
        self.lines: list[str] = []

    def line(self, text: str = "", depth: int = 1) -> None:
        self.lines.append("  " * depth + text if text else "")

    def function(self, ir_name: str) -> tuple[str, FunctionSignature]:
        sig = self.signatures.get(ir_name)
        info = self.cpp.info.get(ir_name)
        if sig is None or info is None:
            raise CppEmitError(f"the module has no function @{ir_name}")
        return info.cpp_name, sig


def tensors_dlp_header(shapes: Mapping[str, tuple[int, ...]]) -> tuple[str, list[str]]:
    """The `.dlp` JSON header of float32 tensors of `shapes` (name -> shape) and the
    names in the file's order (`weights._dlp_bytes`: name-sorted, packed)."""
    order = sorted(shapes)
    entries: dict[str, dict[str, object]] = {}
    offset = 0
    for name in order:
        size = 4 * prod(shapes[name])
        entries[name] = {"dtype": "float", "shape": list(shapes[name]), "size": size,
                         "start": offset}
        offset += size
    text = json.dumps({"tensors": entries}, separators=(",", ":"), ensure_ascii=False)
    return text, order


def prepare_out_dir(out_dir: Path) -> Path:
    """`out_dir`, created if need be (with its parents); a file there is an error."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        # mkdir would say "File exists", which reads as if DIR were fine.
        raise NotADirectoryError(errno.ENOTDIR, "expected a directory, found a file",
                                 str(out_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir

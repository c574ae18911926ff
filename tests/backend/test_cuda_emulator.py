"""The CUDA emulator (frame_mlir/backend/cuda/emulator.py) on hand-written kernels.

The kernels are NVPTX LLVM IR as the pipeline writes it (before libdevice linking):
`test_kernels_assemble_for_the_gpu` compiles the same text for sm_80 with libdevice
and, where ptxas is installed, assembles it, so what the emulator runs here are real
CUDA kernels.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from frame_mlir.backend.cuda.emulator import (
    EmulatedDevice,
    EmulatorError,
    build_runtime,
    kernel_names_of,
)

LIBDEVICE = Path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")

KERNELS = r"""
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@frame_smem_0 = internal addrspace(3) global [256 x float] undef, align 16

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.z()
declare void @llvm.nvvm.barrier0()
declare float @__nv_expf(float)
declare float @__nv_powf(float, float)

; Every thread writes its global linear id at that index of %lin, plus its ids packed
; one byte each: %rec_xy = tid.x | tid.y << 8 | ctaid.x << 16 | ctaid.y << 24 and
; %rec_z = tid.z | ctaid.z << 8 | ntid.z << 16 | nctaid.z << 24.
; (A kernel by !nvvm.annotations rather than ptx_kernel.)
define void @thread_ids(ptr noalias %lin, ptr noalias %rec_xy, ptr noalias %rec_z) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %tz = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %bz = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %nz = call i32 @llvm.nvvm.read.ptx.sreg.ntid.z()
  %gx = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %gy = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
  %gz = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.z()
  %x0 = mul i32 %bx, %nx
  %x = add i32 %x0, %tx
  %y0 = mul i32 %by, %ny
  %y = add i32 %y0, %ty
  %z0 = mul i32 %bz, %nz
  %z = add i32 %z0, %tz
  %width = mul i32 %gx, %nx
  %height = mul i32 %gy, %ny
  %zh = mul i32 %z, %height
  %zhy = add i32 %zh, %y
  %row = mul i32 %zhy, %width
  %id = add i32 %row, %x
  %id64 = zext i32 %id to i64
  %p.lin = getelementptr inbounds i32, ptr %lin, i64 %id64
  store i32 %id, ptr %p.lin, align 4
  %ty8 = shl i32 %ty, 8
  %bx16 = shl i32 %bx, 16
  %by24 = shl i32 %by, 24
  %xy0 = or i32 %tx, %ty8
  %xy1 = or i32 %xy0, %bx16
  %xy = or i32 %xy1, %by24
  %p.xy = getelementptr inbounds i32, ptr %rec_xy, i64 %id64
  store i32 %xy, ptr %p.xy, align 4
  %bz8 = shl i32 %bz, 8
  %nz16 = shl i32 %nz, 16
  %gz24 = shl i32 %gz, 24
  %rz0 = or i32 %tz, %bz8
  %rz1 = or i32 %rz0, %nz16
  %rz = or i32 %rz1, %gz24
  %p.z = getelementptr inbounds i32, ptr %rec_z, i64 %id64
  store i32 %rz, ptr %p.z, align 4
  ret void
}

; __syncthreads in a helper function: the emulator must see the barrier through calls.
define internal void @sync_threads() {
  call void @llvm.nvvm.barrier0()
  ret void
}

; out[block] = sum of the block's 256 inputs, as a tree in shared memory: after step s
; (s = 128, 64, ..., 1) slot t < s holds slot t + slot t + s.
define ptx_kernel void @block_sum(ptr noalias %in, ptr noalias %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %bid, %ntid
  %gid = add i32 %base, %tid
  %gid64 = zext i32 %gid to i64
  %src = getelementptr inbounds float, ptr %in, i64 %gid64
  %v = load float, ptr %src, align 4
  %tid64 = zext i32 %tid to i64
  %slot = getelementptr inbounds [256 x float], ptr addrspace(3) @frame_smem_0, i64 0, i64 %tid64
  store float %v, ptr addrspace(3) %slot, align 4
  call void @sync_threads()
  br label %step

step:
  %s = phi i32 [ 128, %entry ], [ %s.next, %latch ]
  %active = icmp ult i32 %tid, %s
  br i1 %active, label %add, label %latch

add:
  %other = add i32 %tid, %s
  %other64 = zext i32 %other to i64
  %oslot = getelementptr inbounds [256 x float], ptr addrspace(3) @frame_smem_0, i64 0, i64 %other64
  %a = load float, ptr addrspace(3) %slot, align 4
  %b = load float, ptr addrspace(3) %oslot, align 4
  %sum = fadd float %a, %b
  store float %sum, ptr addrspace(3) %slot, align 4
  br label %latch

latch:
  call void @llvm.nvvm.barrier0()
  %s.next = lshr i32 %s, 1
  %more = icmp ne i32 %s.next, 0
  br i1 %more, label %step, label %done

done:
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %write, label %exit

write:
  ; Through a generic pointer, as CUDA code often reads shared memory.
  %generic = addrspacecast ptr addrspace(3) @frame_smem_0 to ptr
  %r = load float, ptr %generic, align 16
  %bid64 = zext i32 %bid to i64
  %dst = getelementptr inbounds float, ptr %out, i64 %bid64
  store float %r, ptr %dst, align 4
  br label %exit

exit:
  ret void
}

; e[i] = expf(x[i]), p[i] = powf(base[i], y[i]) for i < *n.
define ptx_kernel void @exp_pow(ptr noalias %n, ptr noalias %x, ptr noalias %base,
                                ptr noalias %y, ptr noalias %e, ptr noalias %p) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %i0 = mul i32 %bid, %ntid
  %i = add i32 %i0, %tid
  %count = load i32, ptr %n, align 4
  %inside = icmp slt i32 %i, %count
  br i1 %inside, label %body, label %exit

body:
  %i64 = sext i32 %i to i64
  %px = getelementptr inbounds float, ptr %x, i64 %i64
  %xv = load float, ptr %px, align 4
  %ev = call float @__nv_expf(float %xv)
  %pe = getelementptr inbounds float, ptr %e, i64 %i64
  store float %ev, ptr %pe, align 4
  %pb = getelementptr inbounds float, ptr %base, i64 %i64
  %bv = load float, ptr %pb, align 4
  %py = getelementptr inbounds float, ptr %y, i64 %i64
  %yv = load float, ptr %py, align 4
  %pv = call float @__nv_powf(float %bv, float %yv)
  %pp = getelementptr inbounds float, ptr %p, i64 %i64
  store float %pv, ptr %pp, align 4
  br label %exit

exit:
  ret void
}

; Only thread 0 reaches the barrier: undefined behaviour on the GPU for any block of
; more than one thread.
define ptx_kernel void @divergent_barrier(ptr noalias %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %sync, label %exit

sync:
  call void @llvm.nvvm.barrier0()
  store i32 1, ptr %out, align 4
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @thread_ids, !"kernel", i32 1}
"""


@pytest.fixture(scope="module")
def device() -> EmulatedDevice:
    return EmulatedDevice(KERNELS)


def test_kernel_names_both_forms(device: EmulatedDevice) -> None:
    expected = ["thread_ids", "block_sum", "exp_pow", "divergent_barrier"]
    assert kernel_names_of(KERNELS) == expected
    assert device.kernel_names() == expected


def _run_thread_ids(device: EmulatedDevice, grid: tuple[int, int, int],
                    block: tuple[int, int, int]) -> None:
    shape = tuple(g * b for g, b in zip(grid[::-1], block[::-1], strict=True))  # z, y, x
    lin = np.full(shape, -1, np.int32)
    rec_xy = np.full(shape, -1, np.int32)
    rec_z = np.full(shape, -1, np.int32)
    device.launch("thread_ids", grid, block, [lin.ctypes.data, rec_xy.ctypes.data,
                                              rec_z.ctypes.data])
    z, y, x = np.indices(shape, dtype=np.int32)
    np.testing.assert_array_equal(lin, np.arange(lin.size, dtype=np.int32).reshape(shape))
    bx, by, bz = block
    gz = grid[2]
    np.testing.assert_array_equal(
        rec_xy, (x % bx) | (y % by) << 8 | (x // bx) << 16 | (y // by) << 24)
    np.testing.assert_array_equal(rec_z, (z % bz) | (z // bz) << 8 | bz << 16 | gz << 24)


def test_thread_ids_2d(device: EmulatedDevice) -> None:
    # Blocks not square, grid not square: a swapped x/y would show.
    _run_thread_ids(device, (3, 2, 1), (8, 4, 1))
    _run_thread_ids(device, (1, 5, 1), (16, 2, 1))


def test_thread_ids_3d(device: EmulatedDevice) -> None:
    _run_thread_ids(device, (2, 3, 2), (4, 2, 3))


def test_block_tree_sum_in_shared_memory(device: EmulatedDevice) -> None:
    blocks = 5
    x = np.random.default_rng(0).standard_normal(blocks * 256).astype(np.float32)
    out = np.zeros(blocks, np.float32)
    device.launch("block_sum", (blocks, 1, 1), (256, 1, 1), [x.ctypes.data, out.ctypes.data])
    # The same tree in numpy: the same float32 additions in the same order.
    tree = x.reshape(blocks, 256)
    while tree.shape[1] > 1:
        half = tree.shape[1] // 2
        tree = tree[:, :half] + tree[:, half:]
    np.testing.assert_array_equal(out, tree[:, 0])
    np.testing.assert_allclose(out, x.reshape(blocks, 256).sum(axis=1, dtype=np.float64),
                               rtol=1e-5, atol=1e-5)


def test_libdevice_exp_and_pow(device: EmulatedDevice) -> None:
    n = 1000  # not a multiple of the block: the bounds check matters
    rng = np.random.default_rng(1)
    x = rng.uniform(-20, 20, n).astype(np.float32)
    base = rng.uniform(0.05, 8, n).astype(np.float32)
    y = rng.uniform(-4, 4, n).astype(np.float32)
    count = np.array([n], np.int32)
    e = np.full(n + 24, np.nan, np.float32)
    p = np.full(n + 24, np.nan, np.float32)
    device.launch("exp_pow", ((n + 127) // 128, 1, 1), (128, 1, 1),
                  [a.ctypes.data for a in (count, x, base, y, e, p)])
    for got, want in ((e[:n], np.exp(x.astype(np.float64)).astype(np.float32)),
                      (p[:n], np.power(base.astype(np.float64), y).astype(np.float32))):
        ulps = np.abs(got - want) / np.spacing(np.abs(want))
        assert ulps.max() <= 2, ulps.max()
    assert np.isnan(e[n:]).all() and np.isnan(p[n:]).all()  # threads past n wrote nothing


def test_divergent_barrier_is_an_error(device: EmulatedDevice) -> None:
    flag = np.zeros(1, np.int32)
    with pytest.raises(EmulatorError, match=r"divergent_barrier.*barrier divergence in "
                       r"block \(0, 0, 0\): 1 thread\(s\) wait"):
        device.launch("divergent_barrier", (2, 1, 1), (32, 1, 1), [flag.ctypes.data])
    # A block of one thread is trivially converged.
    device.launch("divergent_barrier", (1, 1, 1), (1, 1, 1), [flag.ctypes.data])
    assert flag[0] == 1
    # The emulator is usable after the failed launch.
    x = np.ones(256, np.float32)
    out = np.zeros(1, np.float32)
    device.launch("block_sum", (1, 1, 1), (256, 1, 1), [x.ctypes.data, out.ctypes.data])
    assert out[0] == 256


def test_module_as_llvm_prints_it() -> None:
    """The same kernels after an LLVM round trip (as a pipeline that prints modules
    with llvmlite writes them): barrier0 auto-upgraded to barrier.cta.sync.aligned.all,
    intrinsic attribute groups (nocallback, nosync, memory(none)) spelled out."""
    import llvmlite.binding as llvm

    printed = str(llvm.parse_assembly(KERNELS))
    assert "llvm.nvvm.barrier.cta.sync.aligned.all" in printed
    device = EmulatedDevice(printed)
    assert sorted(device.kernel_names()) == sorted(kernel_names_of(KERNELS))
    x = np.arange(512, dtype=np.float32)
    out = np.zeros(2, np.float32)
    device.launch("block_sum", (2, 1, 1), (256, 1, 1), [x.ctypes.data, out.ctypes.data])
    np.testing.assert_array_equal(out, x.reshape(2, 256).sum(axis=1))  # exact: integers
    with pytest.raises(EmulatorError, match="barrier divergence"):
        device.launch("divergent_barrier", (1, 1, 1), (4, 1, 1), [out.ctypes.data])


@pytest.mark.parametrize(("name", "grid", "block", "nargs", "message"), [
    ("nope", (1, 1, 1), (1, 1, 1), 1, "no kernel named 'nope'"),
    ("block_sum", (0, 1, 1), (1, 1, 1), 2, r"grid.x = 0 is out of range"),
    ("block_sum", (1, 1, 65536), (1, 1, 1), 2, r"grid.z = 65536 is out of range"),
    ("block_sum", (1, 1), (1, 1, 1), 2, "three dimensions"),
    ("block_sum", (1, 1, 1), (1, 0, 1), 2, r"block.y = 0 is out of range"),
    ("block_sum", (1, 1, 1), (1, 1, 65), 2, r"block.z = 65 is out of range"),
    ("block_sum", (1, 1, 1), (2048, 1, 1), 2, r"block.x = 2048 is out of range"),
    ("block_sum", (1, 1, 1), (64, 32, 1), 2, "2048 threads"),
    ("block_sum", (1, 1, 1), (1.5, 1, 1), 2, "must be an integer"),
    ("block_sum", (1, 1, 1), (256, 1, 1), 1, "takes 2 argument"),
])
def test_launch_argument_errors(device: EmulatedDevice, name: str, grid: tuple,
                                block: tuple, nargs: int, message: str) -> None:
    buffers = [np.zeros(256, np.float32) for _ in range(nargs)]
    with pytest.raises(ValueError, match=message):
        device.launch(name, grid, block, [b.ctypes.data for b in buffers])


def test_bad_argument_values(device: EmulatedDevice) -> None:
    with pytest.raises(ValueError, match="argument 1: expected an address"):
        device.launch("block_sum", (1, 1, 1), (1, 1, 1), [0, "x"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="is not an address"):
        device.launch("block_sum", (1, 1, 1), (1, 1, 1), [0, -1])


_KERNEL_CALLING = """
target triple = "nvptx64-nvidia-cuda"
{decls}
define ptx_kernel void @k(ptr %p) {{
  {body}
  ret void
}}
"""


@pytest.mark.parametrize(("decls", "body", "message"), [
    ("declare float @__nv_frobnicatef(float)",
     "%v = call float @__nv_frobnicatef(float 1.0)\n store float %v, ptr %p",
     r"unknown libdevice function\(s\) @__nv_frobnicatef"),
    ("declare double @__nv_expf(double)",
     "%v = call double @__nv_expf(double 1.0)\n store double %v, ptr %p",
     r"@__nv_expf declared as double \(double\), libdevice's is float \(float\)"),
    ("declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)",
     "%v = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 0, i32 0, i32 31)\n"
     " store i32 %v, ptr %p",
     r"NVVM intrinsic\(s\) @llvm.nvvm.shfl.sync.idx.i32"),
    ("declare i32 @vprintf(ptr, ptr)",
     "%v = call i32 @vprintf(ptr null, ptr null)",
     "external function.*@vprintf"),
    ("@dyn = external addrspace(3) global [0 x float]",
     "store float 1.0, ptr addrspace(3) @dyn",
     "external global.*@dyn"),
])
def test_unsupported_modules(decls: str, body: str, message: str) -> None:
    with pytest.raises(EmulatorError, match=message):
        EmulatedDevice(_KERNEL_CALLING.format(decls=decls, body=body))


def test_runtime_is_built_once_per_source(tmp_path: Path) -> None:
    path = build_runtime(tmp_path)
    assert path.parent == tmp_path and path.name.startswith("libframe_emu-")
    stamp = path.stat().st_mtime_ns
    assert build_runtime(tmp_path) == path
    assert path.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left


def test_kernels_assemble_for_the_gpu(tmp_path: Path) -> None:
    """The same IR text, linked with libdevice, compiles for sm_80 (and, with ptxas
    installed, assembles): the emulated kernels are valid CUDA kernels."""
    import llvmlite.binding as llvm

    from frame_mlir.backend.llvm.jit import optimize

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    try:
        target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    except RuntimeError:
        pytest.skip("this llvmlite has no NVPTX target")
    if not LIBDEVICE.exists():
        pytest.skip(f"no libdevice at {LIBDEVICE}")
    machine = target.create_target_machine(cpu="sm_80", features="+ptx80", opt=3)
    module = llvm.parse_assembly(KERNELS)
    module.data_layout = str(machine.target_data)
    libdevice = llvm.parse_bitcode(LIBDEVICE.read_bytes())
    libdevice.triple = module.triple
    libdevice.data_layout = module.data_layout
    module.link_in(libdevice)
    for f in module.functions:
        if f.name.startswith("__nv_") and not f.is_declaration:
            f.linkage = llvm.Linkage.internal  # so that the unused ones are dropped
    module.verify()
    optimize(module, machine, 3)
    ptx = machine.emit_assembly(module)
    for name in kernel_names_of(KERNELS):
        assert f".entry {name}(" in ptx
    assert "bar.sync" in ptx and ".shared" in ptx
    assert "__nv_" not in ptx  # libdevice was linked in
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas not found: PTX emitted but not assembled")
    ptx_file = tmp_path / "kernels.ptx"
    ptx_file.write_text(ptx)
    proc = subprocess.run(["ptxas", "-arch=sm_80", str(ptx_file), "-o", "/dev/null"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


_DOUBLE = r"""
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @double(ptr noalias %x, ptr noalias %y) {
entry:
  %v = load float, ptr %x, align 4
  %w = fmul float %v, 2.0
  store float %w, ptr %y, align 4
  ret void
}
"""


def test_host_functions_of_more_buffers_than_ctypes_calls() -> None:
    """The CUDA host side has no per-call argument limit (issue 30): a host function
    of 1,200 buffers -- more than the 1,024 arguments of a ctypes call -- copies each
    in, launches its kernels and copies each result back, called by the CPU trainers'
    `BoundFunction` through `DeviceExecutable` on the emulator."""
    from frame_mlir.backend.cuda.compile import CudaProgram, HostFunction, Launch
    from frame_mlir.backend.cuda.runtime import DeviceExecutable, EmulatorBackend
    from frame_mlir.runtime.executable import ArgInfo, BoundFunction, FunctionSignature

    n = 600
    args = tuple(ArgInfo(f"x{i}", "input", (1,)) for i in range(n)) + tuple(
        ArgInfo(f"y{i}", "output", (1,), result_index=i) for i in range(n))
    sig = FunctionSignature("f", args, 0)
    offsets = tuple(4 * k for k in range(2 * n))
    launches = tuple(Launch("double", (1, 1, 1), (1, 1, 1), (4 * i, 4 * (n + i)))
                     for i in range(n))
    program = CudaProgram({"f": HostFunction("f", launches, offsets, sig)}, 8 * n,
                          ["double"], _DOUBLE)
    ex = DeviceExecutable(program, EmulatorBackend(program))
    fn = BoundFunction(ex, sig)
    xs = [np.array([i], np.float32) for i in range(n)]
    fn.call(xs)
    assert [float(fn.outputs[i][0]) for i in range(n)] == [2.0 * i for i in range(n)]
    for x in xs:
        x *= 3
    fn.bind(xs)
    fn.run()
    assert [float(fn.outputs[i][0]) for i in range(n)] == [6.0 * i for i in range(n)]

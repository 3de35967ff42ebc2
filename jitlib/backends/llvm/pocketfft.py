"""One-dimensional FFTs as compiled kernels that call NumPy's own pocketfft loops, so a
native loop (a spectral time step: FFT, multiply, inverse FFT) makes no host call.

np.fft's transforms are generalized ufuncs of `numpy.fft._pocketfft_umath` (`fft`,
`ifft`, `rfft_n_even`, `rfft_n_odd`, `irfft`, signature `(n),()->(m)`): NumPy calls their
inner loop on the rows with a normalisation factor. A kernel here calls the same loop
function with the same factor, so the bits are np.fft's (the interpreter's rule). The
loop's address is read from the ufunc object (NumPy's public PyUFuncObject layout,
checked against the ufunc's own nin, nout and ntypes) and resolved by name when an
object is loaded (`loader.provide`), never baked in: saved object code stays valid.

Which loop NumPy picks, measured on NumPy 2.4 and checked by the tests: forward
transforms pass a Python int factor, so 32-bit data runs the double loop (converted in,
rounded out); inverse transforms pass a factor of the data's own precision
(`np.reciprocal(n, dtype)`), so 32-bit data runs the single loop. Each 32-bit forward row
is converted on the stack (transforms up to MAX_CONVERTED points); anything else (several
axes, a length other than the input's for a complex transform, empty) keeps the host
call (host_fft.py).
"""
import ctypes

import numpy as np

from jitlib.backends.llvm import host_fft, loader
from jitlib.backends.llvm.emitter import Unsupported
from jitlib.backends.llvm.kernels import _function, _native

MAX_CONVERTED = 1 << 14   # points of a 32-bit forward row converted on the stack
_PREFIX = "jitlib_pocketfft_"
_HEAD = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)   # PyObject_HEAD
_SCALAR = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}


def _ufunc_fields(ufunc):
    """(functions, data) pointer arrays of a ufunc object, or None where its layout is
    not the one this reads (another build of Python or NumPy)."""
    base = id(ufunc)
    ints = (ctypes.c_int * 4).from_address(base + _HEAD)   # nin, nout, nargs, identity
    if (ints[0], ints[1], ints[2]) != (ufunc.nin, ufunc.nout, ufunc.nargs):
        return None
    functions = ctypes.c_void_p.from_address(base + _HEAD + 16).value
    data = ctypes.c_void_p.from_address(base + _HEAD + 24).value
    ntypes = ctypes.c_int.from_address(base + _HEAD + 32).value
    if ntypes != ufunc.ntypes or not functions:
        return None
    return functions, data


def _loop(name, k):
    """(address of loop k of pocketfft ufunc `name`, its data pointer), or None."""
    try:
        from numpy.fft import _pocketfft_umath as umath
        ufunc = getattr(umath, name)
    except (ImportError, AttributeError):
        return None
    fields = _ufunc_fields(ufunc) if isinstance(ufunc, np.ufunc) else None
    if fields is None or not 0 <= k < ufunc.ntypes:
        return None
    functions, data = fields
    function = ctypes.c_void_p.from_address(functions + 8 * k).value
    datum = ctypes.c_void_p.from_address(data + 8 * k).value if data else None
    return (function, datum) if function else None


def _lookup(symbol):
    if not symbol.startswith(_PREFIX):
        return None
    name, _, k = symbol[len(_PREFIX):].rpartition("_")
    found = _loop(name, int(k)) if k.isdigit() else None
    return None if found is None else found[0]


loader.provide(_lookup)


def _plan(fft, x):
    """(ufunc name, loop number, factor's dtype, convert through f64?) for FFT op `fft`
    on operand `x`; raises Unsupported for the forms kept on the host."""
    kind, lengths = fft.attrs["fft_type"], fft.attrs["fft_length"]
    if len(lengths) != 1 or x.size == 0 or fft.size == 0:
        raise Unsupported("FFTs over several axes, or empty, call NumPy from the host")
    n, single = lengths[0], np.dtype(fft.dtype) in (np.dtype(np.complex64),
                                                    np.dtype(np.float32))
    if kind in ("FFT", "IFFT", "RFFT") and x.shape[-1] != n:
        raise Unsupported("an FFT of another length than its input's calls NumPy")
    if kind == "FFT":
        return "fft", 0, np.dtype(np.float64), single
    if kind == "IFFT":
        return "ifft", int(single), np.dtype(np.float32 if single else np.float64), False
    if kind == "RFFT":
        return f"rfft_n_{'odd' if n % 2 else 'even'}", 0, np.dtype(np.float64), single
    return "irfft", int(single), np.dtype(np.float32 if single else np.float64), False


def render(name, body):
    """The NativeKernel of a fused body that is one FFT op, else raise Unsupported."""
    fft = host_fft.one_fft(body)
    if fft is None:
        raise Unsupported("not one FFT")
    (x,) = fft.operands
    ufunc, k, factor_dtype, convert = _plan(fft, x)
    n_in, n_out = x.shape[-1], fft.shape[-1]
    rows = x.size // n_in
    if convert and (n_in + n_out) * 16 > MAX_CONVERTED * 32:
        raise Unsupported("a long 32-bit forward FFT calls NumPy from the host")
    found = _loop(ufunc, k)
    if found is None:
        raise Unsupported("NumPy's pocketfft loops were not found: FFTs call NumPy")
    symbol = f"{_PREFIX}{ufunc}_{k}"
    from llvmlite import binding
    binding.add_symbol(symbol, found[0])   # MCJIT, where jitlib's loader declines an object
    # the loop's data is a pointer to its direction flag (fft, ifft) or unused
    direction = None if found[1] is None else ctypes.c_uint8.from_address(found[1]).value
    # the factor np.fft passes: 1 forward, np.reciprocal(n, dtype) inverse
    factor = 1.0 if ufunc.startswith(("fft", "rfft")) else float(
        np.reciprocal(fft.attrs["fft_length"][0], dtype=factor_dtype))
    fn = _function(name, 1, 1, True)
    fn.declare(symbol, f"declare void @{symbol}(ptr, ptr, ptr, ptr)")
    t = _SCALAR[factor_dtype]
    fct = fn.alloca(t)
    fn.emit(f"store {t} {_llvm_float(factor, factor_dtype)}, ptr {fct}")
    data = "null"
    if direction is not None:
        data = fn.alloca("i8")
        fn.emit(f"store i8 {direction}, ptr {data}")
    item_in, item_out = np.dtype(x.dtype).itemsize, np.dtype(fft.dtype).itemsize
    if not convert:
        _call(fn, symbol, "%in0", fct, "%out0", rows, n_in, n_out, item_in, item_out, data)
    else:
        _converted_rows(fn, symbol, fct, rows, n_in, n_out, x.dtype, fft.dtype, data)
    fn.emit("ret void")
    return _native(fn, fn.render(), body.params, body.results, False)


def _call(fn, symbol, src, fct, dst, rows, n_in, n_out, item_in, item_out, data):
    """The loop on `rows` rows of `n_in` points at `src` into rows of `n_out` at `dst`:
    arguments, dimensions and steps as a gufunc's inner loop takes them."""
    args = fn.op("alloca [3 x ptr]", "args")
    for j, p in enumerate((src, fct, dst)):
        slot = fn.op(f"getelementptr [3 x ptr], ptr {args}, i64 0, i64 {j}", "a")
        fn.emit(f"store ptr {p}, ptr {slot}")
    dims = _i64_array(fn, (rows, n_in, n_out))
    steps = _i64_array(fn, (n_in * item_in, 0, n_out * item_out, item_in, item_out))
    fn.emit(f"call void @{symbol}(ptr {args}, ptr {dims}, ptr {steps}, ptr {data})")


def _i64_array(fn, values):
    array = fn.op(f"alloca [{len(values)} x i64]", "ints")
    for j, v in enumerate(values):
        slot = fn.op(f"getelementptr [{len(values)} x i64], ptr {array}, i64 0, i64 {j}", "i")
        fn.emit(f"store i64 {v}, ptr {slot}")
    return array


def _converted_rows(fn, symbol, fct, rows, n_in, n_out, in_dtype, out_dtype, data):
    """Each row widened to double on the stack, transformed there, rounded back: what
    NumPy's casting around the double loop does."""
    from jitlib.backends.llvm.kernels import loop
    parts_in = 2 if np.dtype(in_dtype).kind == "c" else 1
    parts_out = 2 if np.dtype(out_dtype).kind == "c" else 1
    wide_in = fn.op(f"alloca double, i64 {n_in * parts_in}, align 64", "wide")
    wide_out = fn.op(f"alloca double, i64 {n_out * parts_out}, align 64", "wide")

    def row(r):
        base_in = fn.op(f"mul i64 {r}, {n_in * parts_in}", "b")
        base_out = fn.op(f"mul i64 {r}, {n_out * parts_out}", "b")

        def widen(e):
            at = fn.op(f"add i64 {base_in}, {e}", "e")
            src = fn.op(f"getelementptr float, ptr %in0, i64 {at}", "p")
            value = fn.op(f"fpext float {fn.op(f'load float, ptr {src}', 'v')} to double", "v")
            dst = fn.op(f"getelementptr double, ptr {wide_in}, i64 {e}", "p")
            fn.emit(f"store double {value}, ptr {dst}")
        loop(fn, n_in * parts_in, widen)
        _call(fn, symbol, wide_in, fct, wide_out, 1, n_in, n_out, 8 * parts_in,
              8 * parts_out, data)

        def narrow(e):
            src = fn.op(f"getelementptr double, ptr {wide_out}, i64 {e}", "p")
            value = fn.op(f"fptrunc double {fn.op(f'load double, ptr {src}', 'v')} to float",
                          "v")
            at = fn.op(f"add i64 {base_out}, {e}", "e")
            dst = fn.op(f"getelementptr float, ptr %out0, i64 {at}", "p")
            fn.emit(f"store float {value}, ptr {dst}")
        loop(fn, n_out * parts_out, narrow)
    loop(fn, rows, row)


def _llvm_float(value, dtype):
    """`value` as an LLVM literal of `dtype` (a float is written as the double of its
    exact value, in hexadecimal, as LLVM wants)."""
    exact = float(np.dtype(dtype).type(value))
    return "0x%016X" % np.array(exact, np.float64).view(np.uint64)

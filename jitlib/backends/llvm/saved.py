"""Compiled programs on disk: a warm process builds the executable without optimizing,
rendering or running LLVM.

An `llvm-program` entry is what `LLVMBackend.compile` derived from one traced module, as
plain JSON: the optimized module (hlo/serial.py) and, per kernel, its rendered record
(rendered.py) with its IR text's hash and object code (base64), or the reason it runs on
the interpreter. Building the executable from an entry reads one file and maps the code
(loader.py), with no other lookup. The key covers the traced module's text, the sources of the
IR, the optimizer and the code generators (a dev checkout keeps one version number
while they change), and the target: the same key on another CPU is another entry.

On a warm start, optimizing and rendering the program become one read and a decode; the
object code in the entry saves two more reads and two hashes of the IR text.
"""
import base64
import functools
import hashlib
import json

from jitlib import logs
from jitlib.backends.llvm import rendered
from jitlib.backends.llvm.compiler import CODEGEN_SOURCES, get_compiler
from jitlib.backends.llvm.executable import native_texts, render
from jitlib.cache.fingerprint import source_fingerprint
from jitlib.hlo import serial
from jitlib.hlo.ops import Op

KIND = "llvm-program"


def program_key(store, module):
    """The disk key of the program compiled from `module` on this host. The module goes
    in as its plain data (hlo/serial.py), which says all its text does, locations
    included, in a fraction of the time printing takes."""
    return store.key(KIND, serial.dumps(module), context())


def context():
    """What a saved program depends on besides its module: the sources of the IR, the
    optimizer and the code generators, and the target (as one hash: the target holds
    the CPU's ~900 feature flags)."""
    return _context(source_fingerprint(*CODEGEN_SOURCES), get_compiler().target())


@functools.lru_cache(maxsize=8)
def _context(fingerprint, target):
    return hashlib.sha256(repr((fingerprint, target)).encode()).hexdigest()


def save(store, key, optimized, made, code, largest_product):
    """Store the program: `made` maps each FUSION of `optimized` to (kernel, None) or
    (None, why it runs on the interpreter), as `executable.render` gave them; `code` maps
    each kernel's IR text to its KernelCode (compiler.py); `largest_product` is the
    multiply-adds of its largest float product (which BLAS a load prepares)."""
    try:
        kernels = []   # in the order of the module's FUSIONs: names need not be unique
        for fusion in _fusions(optimized):
            kernel, reason = made[fusion]
            record = None if kernel is None else rendered.kernel_record(
                kernel, fusion.attrs["body"])
            kernels.append({"fallback": reason} if kernel is None
                           else {"render": True} if record is None
                           else {"kernel": record, "code": _code(kernel, code)})
        payload = json.dumps({"optimized": serial.to_data(optimized), "kernels": kernels,
                              "largest_product": largest_product})
    except TypeError as e:   # a value with no plain form: the program is not kept
        logs.log("cache", "program %s is not saved: %s", optimized.name, e)
        return
    store.store(key, payload.encode(), kind=KIND, module=optimized.name)


def _code(kernel, code):
    """[digest, base64 object code] of the kernel's compiled function, or None (a dot
    without an epilogue, or code mapped without its object)."""
    texts = native_texts(kernel)
    handle = code.get(texts[0][0]) if texts else None
    if handle is None or handle.object is None:
        return None
    return [handle.digest, base64.b64encode(handle.object).decode()]


def load(store, key, record=None):
    """(optimized module, made, saved code, largest product) of the program saved under
    `key`, or None; saved code maps kernel IR texts to (digest, object code), the largest
    product is its multiply-adds (0: no float product). `record`: the entry's content
    where the caller read it already (a bucketed call's entry holds a copy). An entry
    that does not read back is discarded (the caller compiles and saves it again)."""
    if record is None:
        record = read(store, key)
        if record is None:
            return None
    try:
        optimized = serial.from_data(record["optimized"])
        fusions, kernels = _fusions(optimized), record["kernels"]
        if len(kernels) != len(fusions):
            raise ValueError(f"{len(kernels)} kernel records for {len(fusions)} kernels")
        made = {fusion: _kernel(entry, fusion) for fusion, entry in zip(fusions, kernels)}
        objects = {}
        for fusion, entry in zip(fusions, kernels):
            if entry.get("code") is not None:
                (text, _), = native_texts(made[fusion][0])
                digest, obj = entry["code"]
                objects[text] = (str(digest), base64.b64decode(obj, validate=True))
        largest = int(record["largest_product"])
    except serial.READ_ERRORS as e:   # base64's errors are ValueErrors too
        logs.warning("cache", "discarding an unreadable saved program: %s", e)
        if store is not None:   # None: a record shipped from another process (jitlib/dask)
            store.discard(key)
        return None
    return optimized, made, objects, largest


def read(store, key):
    """The content (plain data) of the program entry under `key`, or None."""
    data = store.load(key)
    if data is None:
        return None
    try:
        record = json.loads(data)
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except ValueError as e:
        logs.warning("cache", "discarding an unreadable saved program: %s", e)
        store.discard(key)
        return None
    return record


def _fusions(optimized):
    """The module's kernels in instruction order (the order decoding gives back)."""
    return [i for i in optimized.instructions if i.op is Op.FUSION]


def _kernel(entry, fusion):
    if "fallback" in entry:
        return None, str(entry["fallback"])
    if entry.get("render"):
        return render(fusion)
    return rendered.kernel_from_record(entry["kernel"], fusion.attrs["body"]), None


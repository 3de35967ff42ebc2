"""Object code mapped into this process by jitlib itself, without an MCJIT engine.

MCJIT was the costliest part of building an executable whose object code is cached:
making an engine (and the target machine it owns), handing it each object and
finalizing took a tenth of a bucketed MLP's warm start. What jitlib's target machines
emit is simple to map by hand. They compile with
the JIT code model, which on x86-64 is the large one: every reference from code to a
constant pool or to libm is a 64-bit absolute address (R_X86_64_64), and there is no
GOT, PLT, TLS or writable data. So loading is: lay the allocated sections of a
program's objects out in one private mapping, write each relocated address, make the
mapping read-only and executable (never writable and executable at once).

What is handled: ELF64 little-endian x86-64 relocatable objects on Linux; allocated
sections that are neither writable nor thread-local; RELA relocations R_X86_64_64,
R_X86_64_PC64, and R_X86_64_PC32 / PLT32 whose target lies inside the mapping; symbols
not defined by the objects, looked up in the process (dlsym, as MCJIT's resolver does:
libm's sinf, libc's memcpy). Anything else raises `Unloadable`, and the compiler maps
those objects with MCJIT as before (`JITLIB_CPU_LOADER=mcjit` makes it always do so).
"""
import ctypes
import mmap
import platform
import struct
import sys


class Unloadable(Exception):
    """Object code this loader does not map (the compiler falls back to MCJIT)."""


SUPPORTED = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")

_SECTION = struct.Struct("<IIQQQQIIQQ")   # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")        # Elf64_Sym
_RELA = struct.Struct("<QQq")             # Elf64_Rela
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 1, 2, 4, 8, 9
_SHT_X86_64_UNWIND = 0x70000001
_SHF_WRITE, _SHF_ALLOC, _SHF_TLS = 0x1, 0x2, 0x400
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS = 0, 0xff00, 0xfff1
_R_NONE, _R_64, _R_PC32, _R_PLT32, _R_PC64 = 0, 1, 2, 4, 24
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4

_libc = ctypes.CDLL(None, use_errno=True) if SUPPORTED else None
if _libc is not None:
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                           ctypes.c_int, ctypes.c_long]
    _libc.mprotect.restype = _libc.munmap.restype = ctypes.c_int
    _libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class Image:
    """Machine code mapped by `load`; `close()` unmaps it (no call may be running)."""

    def __init__(self, base, size, symbols):
        self.base, self.size, self.symbols = base, size, symbols

    def close(self):
        if self.base:
            _libc.munmap(self.base, self.size)
            self.base = 0


def load(objects, names):
    """Map the ELF relocatable `objects` (bytes) together; (Image, [address of each of
    `names`]). Raises `Unloadable` for anything outside what the module docstring lists."""
    if not SUPPORTED:
        raise Unloadable(f"no loader for {sys.platform} on {platform.machine()}")
    parsed = [_Object(obj) for obj in objects]
    size = 0
    for p in parsed:
        size = p.place(size)
    size = max(-(-size // mmap.PAGESIZE) * mmap.PAGESIZE, mmap.PAGESIZE)
    base = _libc.mmap(None, size, _PROT_READ | _PROT_WRITE,
                      mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if base in (None, _MAP_FAILED):
        raise Unloadable(f"mmap of {size} bytes failed (errno {ctypes.get_errno()})")
    image = Image(base, size, {})
    try:
        memory = bytearray(size)
        for p in parsed:
            p.write(memory, base, image.symbols)
        ctypes.memmove(base, bytes(memory), size)
        if _libc.mprotect(base, size, _PROT_READ | _PROT_EXEC) != 0:
            raise Unloadable(f"mprotect to read+execute failed (errno {ctypes.get_errno()})")
        addresses = []
        for name in names:
            if name not in image.symbols:
                raise Unloadable(f"the objects do not define {name}")
            addresses.append(image.symbols[name])
    except BaseException:
        image.close()
        raise
    return image, addresses


class _Object:
    """One relocatable object: its section headers, and where its allocated sections go."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
            raise Unloadable("not a little-endian ELF64 file")
        e_type, e_machine = struct.unpack_from("<HH", data, 16)
        if e_type != 1 or e_machine != 62:
            raise Unloadable(f"not an x86-64 relocatable object (type {e_type}, machine "
                             f"{e_machine})")
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        if shentsize != _SECTION.size or shnum == 0:
            raise Unloadable("unexpected section header table")
        self.data = data
        self.sections = [_SECTION.unpack_from(data, shoff + i * shentsize)
                         for i in range(shnum)]
        self.offsets = {}   # section index -> offset in the image

    def place(self, cursor):
        """Lay out the allocated sections from `cursor`; the image's new end."""
        for index, (_, kind, flags, _, _, size, _, _, align, _) in enumerate(self.sections):
            if kind == _SHT_REL:
                raise Unloadable("REL relocations")
            if not flags & _SHF_ALLOC:
                continue
            if flags & (_SHF_WRITE | _SHF_TLS):
                raise Unloadable("a writable or thread-local section")
            if kind not in (_SHT_PROGBITS, _SHT_NOBITS, _SHT_X86_64_UNWIND):
                raise Unloadable(f"an allocated section of type {kind:#x}")
            align = max(align, 1)
            cursor = -(-cursor // align) * align
            self.offsets[index] = cursor
            cursor += size
        return cursor

    def write(self, memory, base, exported):
        """Copy the sections into `memory` (mapped at `base`), relocate them, and add the
        global symbols they define to `exported`."""
        data, sections = self.data, self.sections
        for index, at in self.offsets.items():
            _, kind, _, _, offset, size = sections[index][:6]
            if kind != _SHT_NOBITS:
                memory[at:at + size] = data[offset:offset + size]
        tables = {}
        for _, kind, _, _, offset, size, link, target, _, entsize in sections:
            if kind != _SHT_RELA or target not in self.offsets:
                continue   # relocations of a section not mapped (debug info)
            if entsize != _RELA.size:
                raise Unloadable("unexpected relocation entry size")
            if link not in tables:
                tables[link] = self._symbols(link, base)
            self._relocate(memory, base, self.offsets[target], sections[target][5],
                           tables[link], offset, size)
        for index, (_, kind, *_) in enumerate(sections):
            if kind == _SHT_SYMTAB:
                table = tables.get(index) or self._symbols(index, base)
                exported.update((name, address) for name, address, is_global in table
                                if is_global and address is not None and name)

    def _symbols(self, index, base):
        """[(name, address or None, global)] of symbol table `index`; undefined symbols
        are looked up in the process."""
        data, sections = self.data, self.sections
        _, _, _, _, offset, size, link, _, _, entsize = sections[index]
        if entsize != _SYMBOL.size:
            raise Unloadable("unexpected symbol entry size")
        strings = sections[link][4]
        table = []
        for at in range(offset, offset + size, entsize):
            name_at, info, _, shndx, value, _ = _SYMBOL.unpack_from(data, at)
            end = data.index(b"\0", strings + name_at)
            name = data[strings + name_at:end].decode()
            if shndx == _SHN_UNDEF:
                address = _process_symbol(name) if name else None
            elif shndx == _SHN_ABS:
                address = value
            elif shndx >= _SHN_LORESERVE:
                raise Unloadable(f"symbol {name!r} in special section {shndx:#x}")
            else:
                where = self.offsets.get(shndx)
                address = None if where is None else base + where + value
            table.append((name, address, info >> 4 != 0))   # binding: LOCAL is 0
        return table

    def _relocate(self, memory, base, at, size, symbols, offset, length):
        for entry in range(offset, offset + length, _RELA.size):
            r_offset, info, addend = _RELA.unpack_from(self.data, entry)
            kind, index = info & 0xffffffff, info >> 32
            if kind == _R_NONE:
                continue
            name, address, _ = symbols[index]
            if index == 0:
                address = 0   # no symbol: the addend alone
            elif address is None:
                raise Unloadable(f"relocation against unresolved symbol {name!r}")
            width = 4 if kind in (_R_PC32, _R_PLT32) else 8
            if r_offset + width > size:
                raise Unloadable("relocation past its section")
            place = at + r_offset
            if kind == _R_64:
                struct.pack_into("<Q", memory, place, (address + addend) & (2**64 - 1))
            elif kind == _R_PC64:
                value = (address + addend - (base + place)) & (2**64 - 1)
                struct.pack_into("<Q", memory, place, value)
            elif kind in (_R_PC32, _R_PLT32):
                value = address + addend - (base + place)
                if not -2**31 <= value < 2**31:
                    raise Unloadable(f"32-bit relative reference to {name!r} out of range")
                struct.pack_into("<i", memory, place, value)
            else:
                raise Unloadable(f"relocation type {kind}")


_providers = []   # functions name -> address or None, for libraries loaded privately


def provide(lookup):
    """Resolve symbols the process's global scope does not hold through `lookup` (name ->
    address or None) too: routines of a library Python loaded privately (SciPy's
    OpenBLAS, lapack.py), found by name at each load, so saved objects stay valid."""
    _providers.append(lookup)


def _process_symbol(name):
    """The address of `name` in this process (its executable and loaded libraries, then
    the providers'), or None."""
    try:
        return ctypes.cast(_libc[name], ctypes.c_void_p).value
    except (AttributeError, TypeError):
        pass
    for lookup in _providers:
        address = lookup(name)
        if address is not None:
            return address
    return None

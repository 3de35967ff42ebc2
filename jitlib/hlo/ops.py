"""The op vocabulary of jitlib's IR, in one short file.

Each op is a name; its typing rule lives in `shape_rules.py`, its meaning in
`interpreter.py` (the reference), its lowering in each backend's rule table.
The property sets below are what passes and transforms ask about an op.
"""
import enum


class Op(str, enum.Enum):
    # -- leaves
    PARAMETER = "parameter"
    CONSTANT = "constant"
    IOTA = "iota"
    # -- elementwise unary
    NEG = "neg"
    ABS = "abs"
    SIGN = "sign"
    EXP = "exp"
    EXPM1 = "expm1"
    LOG = "log"
    LOG1P = "log1p"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    TANH = "tanh"
    LOGISTIC = "logistic"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"          # half to even, as np.round
    NOT = "not"              # logical on bool, bitwise on integers
    IS_FINITE = "is_finite"
    CONVERT = "convert"
    SINH = "sinh"            # complex only (real ones are composed by the tracer), as are
    COSH = "cosh"            # the five below: NumPy's complex loops, branch cuts included
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    REAL = "real"            # complex -> its real part (float)
    IMAG = "imag"            # complex -> its imaginary part (float)
    CONJ = "conj"            # complex conjugate
    # -- elementwise binary
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"              # ints: truncates toward zero; x/0 == 0
    REM = "rem"              # sign of the dividend (C fmod); ints: x%0 == 0
    POW = "pow"              # floats: exponents 2, 1, 0.5, -1 are x*x, x, sqrt, 1/x exactly
    MAX = "max"              # NaN-propagating, as np.maximum
    MIN = "min"
    ATAN2 = "atan2"
    AND = "and"
    OR = "or"
    XOR = "xor"
    COMPARE = "compare"      # attr direction: EQ NE LT LE GT GE (complex: EQ NE only)
    COMPLEX = "complex"      # complex(re, im): f32 -> c64, f64 -> c128
    # -- elementwise n-ary
    SELECT = "select"        # select(pred, on_true, on_false)
    CLAMP = "clamp"          # clamp(lo, x, hi)
    # -- data movement
    BROADCAST_IN_DIM = "broadcast_in_dim"
    RESHAPE = "reshape"
    TRANSPOSE = "transpose"
    SLICE = "slice"
    PAD = "pad"              # pad(x, scalar pad value)
    CONCATENATE = "concatenate"
    REVERSE = "reverse"
    DYNAMIC_SLICE = "dynamic_slice"                # (x, *scalar starts)
    DYNAMIC_UPDATE_SLICE = "dynamic_update_slice"  # (x, update, *scalar starts)
    GATHER = "gather"        # take along one axis; indices clamped into range
    SCATTER = "scatter"      # mode add|set|mul|min|max along one axis; OOB dropped
    # -- reductions
    REDUCE_SUM = "reduce_sum"
    REDUCE_PROD = "reduce_prod"
    REDUCE_MAX = "reduce_max"
    REDUCE_MIN = "reduce_min"
    REDUCE_AND = "reduce_and"
    REDUCE_OR = "reduce_or"
    ARGMAX = "argmax"
    ARGMIN = "argmin"
    CUMSUM = "cumsum"
    CUMPROD = "cumprod"
    CUMMAX = "cummax"
    CUMMIN = "cummin"
    # -- sorting
    SORT = "sort"            # sort(*keys), attrs dimension, indices: stable, keys compared
    #                          lexicographically (first major), NaN after everything, -0.0
    #                          equal to 0.0; gives the sorted key (one key) or i64 positions
    # -- contraction
    DOT_GENERAL = "dot_general"
    # -- spectral
    FFT = "fft"              # attrs fft_type FFT|IFFT|RFFT|IRFFT, fft_length: the transform
    #                          of the trailing len(fft_length) dims, as XLA's (IFFT and
    #                          IRFFT divide by the number of points, FFT and RFFT do not)
    # -- linear algebra (f32/f64): batch dims lead, the matrix is the last two dims
    CHOLESKY = "cholesky"    # lower factor L, L @ L.T == x, reading x's lower triangle; NaN
    #                          where x is not positive definite
    TRIANGULAR_SOLVE = "triangular_solve"  # (a, b), attrs left_side, lower, transpose_a,
    #                          unit_diagonal: op(a) @ out == b (or out @ op(a) == b)
    LU = "lu"                # attr output: lu (L below the diagonal, unit diagonal implied,
    #                          U on and above), pivots or permutation (i64); x[perm] == L @ U
    QR = "qr"                # attrs output (q | r), full_matrices
    EIGH = "eigh"            # attr output (values ascending | vectors), reading the lower
    #                          triangle
    SVD = "svd"              # attrs output (u | s descending | vh), full_matrices
    # -- kernels: a fusion runs its `body` Module on its operands as one kernel
    FUSION = "fusion"            # attrs body, kind, name; multi-output: used by get_output only
    GET_OUTPUT = "get_output"    # get_output(fusion), index: one result of a multi-output fusion
    # -- control flow: regions are Modules in the attributes, closed (no outer values)
    WHILE = "while"              # while(*carry), attrs cond, body [, trip_count]
    CONDITIONAL = "conditional"  # conditional(index, *operands), attrs branches
    # -- collectives over the devices of a named axis (jitlib.pmap); every one carries
    #    axis_name and axis_size, and means something only where the axis is bound:
    #    hlo/collectives.py combines the devices' values, the single-device interpreter
    #    refuses them
    ALL_REDUCE = "all_reduce"    # attr reduction sum|max|min; sums in device order
    ALL_GATHER = "all_gather"    # attr axis: a new dim of axis_size, device k's value at k
    REDUCE_SCATTER = "reduce_scatter"  # attr axis (of size axis_size): device k gets
    #                                    the sum's k-th slice along it, the dim removed
    COLLECTIVE_PERMUTE = "collective_permute"  # attr pairs (src, dst); no source: zeros
    AXIS_INDEX = "axis_index"    # leaf: this device's position along the axis, i32

    def __str__(self):
        return self.value


O = Op

LEAF = frozenset({O.PARAMETER, O.CONSTANT, O.IOTA, O.AXIS_INDEX})
UNARY = frozenset({
    O.NEG, O.ABS, O.SIGN, O.EXP, O.EXPM1, O.LOG, O.LOG1P, O.SQRT, O.RSQRT, O.TANH,
    O.LOGISTIC, O.SIN, O.COS, O.TAN, O.FLOOR, O.CEIL, O.ROUND, O.NOT, O.IS_FINITE, O.CONVERT,
    O.REAL, O.IMAG, O.CONJ, O.SINH, O.COSH, O.ASIN, O.ACOS, O.ATAN, O.ASINH, O.ACOSH, O.ATANH,
})
BINARY = frozenset({
    O.ADD, O.SUB, O.MUL, O.DIV, O.REM, O.POW, O.MAX, O.MIN, O.ATAN2, O.AND, O.OR, O.XOR,
    O.COMPARE, O.COMPLEX,
})
ELEMENTWISE = UNARY | BINARY | {O.SELECT, O.CLAMP}
# Unary ops defined only on floating-point operands.
FLOAT_ONLY = frozenset({
    O.EXP, O.EXPM1, O.LOG, O.LOG1P, O.SQRT, O.RSQRT, O.TANH, O.LOGISTIC, O.SIN, O.COS,
    O.TAN, O.FLOOR, O.CEIL, O.ROUND, O.IS_FINITE, O.ATAN2,
})
# The ones of those NumPy also defines on complex operands (with complex results).
COMPLEX_TOO = frozenset({
    O.EXP, O.EXPM1, O.LOG, O.LOG1P, O.SQRT, O.RSQRT, O.TANH, O.SIN, O.COS, O.TAN,
})
# Unary ops defined only on complex operands (NumPy's complex loops; the tracer composes
# the real functions from other ops).
COMPLEX_ONLY = frozenset({
    O.SINH, O.COSH, O.ASIN, O.ACOS, O.ATAN, O.ASINH, O.ACOSH, O.ATANH,
})
# Ops on float or integer operands that have no complex meaning (no order on complex).
REAL_ONLY = frozenset({O.REM, O.MAX, O.MIN, O.CLAMP, O.ATAN2})
# The complex parts: real, imag, conj take a complex operand; complex builds one.
COMPLEX_PARTS = frozenset({O.REAL, O.IMAG, O.CONJ, O.COMPLEX})
# Ops defined only on bool and integer operands.
BITWISE = frozenset({O.NOT, O.AND, O.OR, O.XOR})
COMMUTATIVE = frozenset({O.ADD, O.MUL, O.MAX, O.MIN, O.AND, O.OR, O.XOR})
ASSOCIATIVE = frozenset({O.ADD, O.MUL, O.MAX, O.MIN, O.AND, O.OR, O.XOR})
MOVEMENT = frozenset({
    O.BROADCAST_IN_DIM, O.RESHAPE, O.TRANSPOSE, O.SLICE, O.PAD, O.CONCATENATE, O.REVERSE,
    O.DYNAMIC_SLICE, O.DYNAMIC_UPDATE_SLICE, O.GATHER, O.SCATTER,
})
REDUCE = frozenset({
    O.REDUCE_SUM, O.REDUCE_PROD, O.REDUCE_MAX, O.REDUCE_MIN, O.REDUCE_AND, O.REDUCE_OR,
})
ARG_REDUCE = frozenset({O.ARGMAX, O.ARGMIN})
CUMULATIVE = frozenset({O.CUMSUM, O.CUMPROD, O.CUMMAX, O.CUMMIN})
LINALG = frozenset({O.CHOLESKY, O.TRIANGULAR_SOLVE, O.LU, O.QR, O.EIGH, O.SVD})
KERNEL = frozenset({O.FUSION, O.GET_OUTPUT})
# Ops that run Modules of their own (regions): loops and branches, never inside a fusion.
CONTROL = frozenset({O.WHILE, O.CONDITIONAL})
# Ops whose value depends on the other devices of a named axis (pmap's collectives).
COLLECTIVE = frozenset({O.ALL_REDUCE, O.ALL_GATHER, O.REDUCE_SCATTER,
                        O.COLLECTIVE_PERMUTE, O.AXIS_INDEX})

COMPARE_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
SCATTER_MODES = ("add", "set", "mul", "min", "max")
# The results a linear-algebra op can give (its `output` attribute); one op per result,
# so no multi-output machinery is needed (the backends may share the factorization).
LINALG_OUTPUTS = {O.LU: ("lu", "pivots", "permutation"), O.QR: ("q", "r"),
                  O.EIGH: ("values", "vectors"), O.SVD: ("u", "s", "vh")}
# How coarsely a dot_general may round its products, as JAX names it (jit's matmul_precision):
# "highest" is NumPy's (and no attribute), "high" tf32x3 and "default" TF32 on the GPU.
ALL_REDUCE_KINDS = ("sum", "max", "min")
PRECISIONS = ("highest", "high", "default")
# loop: elementwise/movement over one iteration space; reduction: reductions over the same
# dims with their producers and consumers; dot: one dot_general and an elementwise epilogue;
# opaque: anything else (scatter, scans, sort, linear algebra), run as-is.
FUSION_KINDS = ("loop", "reduction", "dot", "opaque")

# The binary op each reduction and scan folds with.
REDUCE_COMBINER = {
    O.REDUCE_SUM: O.ADD, O.REDUCE_PROD: O.MUL, O.REDUCE_MAX: O.MAX,
    O.REDUCE_MIN: O.MIN, O.REDUCE_AND: O.AND, O.REDUCE_OR: O.OR,
    O.CUMSUM: O.ADD, O.CUMPROD: O.MUL, O.CUMMAX: O.MAX, O.CUMMIN: O.MIN,
}

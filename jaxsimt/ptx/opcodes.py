"""PTX opcode tables: the instructions the parser knows, and the subset the emulator executes.

The parser accepts any instruction-shaped statement; `known` marks opcodes of the PTX ISA (up to 9.0).
`SUPPORTED_OPCODES` maps each opcode the lowering executes to the modifiers it accepts; `check_supported`
refuses everything else by name and line.
"""
from __future__ import annotations

from jaxsimt.ptx.errors import PtxUnsupportedError

# ------------------------------------------------------------------------------------------- vocabulary

INT_TYPES = frozenset("b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64".split())
FLOAT_TYPES = frozenset("f16 f16x2 bf16 bf16x2 f32 f64 tf32 e4m3 e5m2 e4m3x2 e5m2x2 e2m1 e2m3 e3m2 "
                        "e2m1x2 e2m3x2 e3m2x2 ue8m0 ue8m0x2 s4 u4 b1 s2f6x2 f32x2".split())
TYPES = INT_TYPES | FLOAT_TYPES | {"pred"}

# State spaces as modifiers (`::` qualifiers are reduced to the base name for Instruction.space).
SPACES = frozenset("param global shared local const tex generic".split())

# Opcodes whose Instruction.space is "generic" when no space is written.
MEMORY_OPCODES = frozenset("""ld st ldu atom red prefetch prefetchu cvta isspacep cp.async wmma.load wmma.store
    ldmatrix stmatrix mbarrier multimem.ld_reduce multimem.st multimem.red cp.async.bulk cp.async.bulk.tensor
    cp.reduce.async.bulk cp.reduce.async.bulk.tensor cp.async.bulk.prefetch cp.async.bulk.prefetch.tensor
    applypriority discard createpolicy""".split())

# Multi-word opcodes, matched longest first against the dotted name.
COMPOUND_OPCODES = tuple(sorted("""wmma.load wmma.store wmma.mma bar.warp.sync
    cp.async cp.async.commit_group cp.async.wait_group cp.async.wait_all cp.async.mbarrier.arrive
    cp.async.bulk cp.async.bulk.tensor cp.async.bulk.commit_group cp.async.bulk.wait_group
    cp.async.bulk.prefetch cp.async.bulk.prefetch.tensor cp.reduce.async.bulk cp.reduce.async.bulk.tensor
    wgmma.mma_async wgmma.fence wgmma.commit_group wgmma.wait_group
    multimem.ld_reduce multimem.st multimem.red tensormap.replace tensormap.cp_fenceproxy""".split(),
                               key=lambda s: -s.count(".")))

KNOWN_OPCODES = frozenset("""
    abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt brx
    call clz cnot copysign cos cp.async createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit fence fma
    fns getctarank griddepcontrol isspacep istypep ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max
    mbarrier membar min mma mov movmatrix mul mul24 nanosleep neg not or pmevent popc prefetch prefetchu prmt
    rcp red redux rem ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore
    stacksave stmatrix sub subc suld suq sured sust szext tanh testp tex tld4 trap txq vabsdiff vabsdiff2
    vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4
    vshl vshr vsub vsub2 vsub4 xor tcgen05 clusterlaunchcontrol st.async red.async
    """.split()) | frozenset(COMPOUND_OPCODES)

# ------------------------------------------------------------------------------------------- supported

_ROUND = {"rn", "rz", "rm", "rp"}
_IROUND = {"rni", "rzi", "rmi", "rpi"}
_SCOPE = {"cta", "cluster", "gpu", "sys"}
_SPACE_MODS = {"param", "param::entry", "param::func", "global", "shared", "shared::cta", "shared::cluster",
               "local", "const"}
_CACHE = {"ca", "cg", "cs", "lu", "cv", "wb", "wt", "L2::64B", "L2::128B", "L2::256B", "L2::cache_hint",
          "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
          "L2::evict_normal", "L2::evict_first", "L2::evict_last"}
_VEC = {"v2", "v4", "v8"}
_NUM = set((INT_TYPES - {"b128"}) | {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64"})
_CMP = set("eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan".split())
_SHAPES = set("m16n16k16 m8n32k16 m32n8k16 m16n16k8 m8n8k4 m8n8k32 m8n8k128 m16n8k4 m16n8k8 m16n8k16 "
              "m16n8k32 m16n8k64 m16n8k128 m16n8k256".split())
_MMA_TYPES = {"f16", "f16x2", "bf16", "f32", "f64", "tf32", "s8", "u8", "s4", "u4", "b1", "s32", "e4m3", "e5m2"}


def _s(*groups) -> frozenset:
    out = set()
    for g in groups:
        out |= set(g.split()) if isinstance(g, str) else set(g)
    return frozenset(out)


SUPPORTED_OPCODES: dict = {
    # data movement
    "ld": _s(_SPACE_MODS, _CACHE, _VEC, _NUM, _SCOPE, "nc volatile relaxed acquire weak mmio"),
    "ldu": _s("global", _VEC, _NUM),
    "st": _s(_SPACE_MODS, _CACHE, _VEC, _NUM, _SCOPE, "volatile relaxed release weak mmio"),
    "mov": _s(_NUM, "pred", _VEC),
    "cvta": _s("to global shared shared::cta shared::cluster local const param param::entry u32 u64"),
    "cvt": _s(_NUM, "tf32", _ROUND, _IROUND, "rna rs ftz sat relu satfinite"),
    # integer and float arithmetic
    "add": _s(_NUM, _ROUND, "sat ftz cc relu"),
    "sub": _s(_NUM, _ROUND, "sat ftz cc relu"),
    "mul": _s(_NUM, _ROUND, "lo hi wide ftz sat"),
    "mad": _s(_NUM, _ROUND, "lo hi wide ftz sat cc"),
    "mul24": _s("lo hi u32 s32"),
    "mad24": _s("lo hi sat u32 s32"),
    "fma": _s(_ROUND, "ftz sat relu oob f16 f16x2 bf16 bf16x2 f32 f64"),
    "div": _s(_ROUND, _NUM, "approx full ftz"),
    "rem": _s("u16 u32 u64 s16 s32 s64"),
    "min": _s(_NUM, "ftz NaN xorsign abs relu"),
    "max": _s(_NUM, "ftz NaN xorsign abs relu"),
    "abs": _s(_NUM, "ftz"),
    "neg": _s(_NUM, "ftz"),
    "sad": _s("u16 u32 u64 s16 s32 s64"),
    "dp4a": _s("u32 s32"),
    "dp2a": _s("lo hi u32 s32"),
    "copysign": _s("f32 f64"),
    "testp": _s("finite infinite number notanumber normal subnormal f32 f64"),
    "rcp": _s(_ROUND, "approx ftz f32 f64"),
    "sqrt": _s(_ROUND, "approx ftz f32 f64"),
    "rsqrt": _s("approx ftz f32 f64"),
    "ex2": _s("approx ftz f32 f16 f16x2 bf16 bf16x2"),
    "lg2": _s("approx ftz f32"),
    "sin": _s("approx ftz f32"),
    "cos": _s("approx ftz f32"),
    "tanh": _s("approx f32 f16 f16x2 bf16 bf16x2"),
    # logic and bits
    "and": _s("pred b16 b32 b64"),
    "or": _s("pred b16 b32 b64"),
    "xor": _s("pred b16 b32 b64"),
    "not": _s("pred b16 b32 b64"),
    "cnot": _s("b16 b32 b64"),
    "shl": _s("b16 b32 b64"),
    "shr": _s("b16 b32 b64 u16 u32 u64 s16 s32 s64"),
    "shf": _s("l r wrap clamp b32"),
    "lop3": _s("b32"),
    "prmt": _s("b32 f4e b4e rc8 ecl ecr rc16"),
    "bfe": _s("u32 u64 s32 s64"),
    "bfi": _s("b32 b64"),
    "bfind": _s("shiftamt u32 u64 s32 s64"),
    "popc": _s("b32 b64"),
    "clz": _s("b32 b64"),
    "brev": _s("b32 b64"),
    # comparison and selection
    "setp": _s(_CMP, _NUM, "and or xor ftz"),
    "set": _s(_CMP, _NUM, "and or xor ftz"),
    "selp": _s(_NUM),
    # control flow
    "bra": _s("uni"),
    "call": _s("uni"),
    "ret": _s("uni"),
    "exit": frozenset(),
    "trap": frozenset(),
    "nanosleep": _s("u32"),
    # synchronisation and warp-level
    "bar": _s("sync arrive red popc and or u32 pred aligned cta"),
    "barrier": _s("sync arrive red popc and or u32 pred aligned cta"),
    "bar.warp.sync": frozenset(),
    "membar": _s("cta gl sys"),
    "fence": _s(_SCOPE, "sc acq_rel"),
    "atom": _s(_SPACE_MODS, _SCOPE, _NUM, _VEC, "relaxed acquire release acq_rel and or xor cas exch add inc "
               "dec min max noftz L2::cache_hint"),
    "red": _s(_SPACE_MODS, _SCOPE, _NUM, _VEC, "relaxed release and or xor add inc dec min max noftz "
              "L2::cache_hint"),
    "shfl": _s("sync up down bfly idx b32"),
    "vote": _s("sync all any uni ballot pred b32"),
    "activemask": _s("b32"),
    "redux": _s("sync add min max and or xor u32 s32 b32 f32 abs NaN"),
    "match": _s("sync any all b32 b64"),
    "isspacep": _s("global shared shared::cta shared::cluster local const param param::entry"),
    "griddepcontrol": _s("launch_dependents wait"),
    # tensor cores
    "wmma.load": _s("a b c sync aligned row col global shared shared::cta", _SHAPES, _MMA_TYPES),
    "wmma.store": _s("d sync aligned row col global shared shared::cta", _SHAPES, _MMA_TYPES),
    "wmma.mma": _s("sync aligned row col satfinite xor popc and", _ROUND, _SHAPES, _MMA_TYPES),
    "mma": _s("sync aligned row col satfinite xor popc and", _SHAPES, _MMA_TYPES),
    "ldmatrix": _s("sync aligned m8n8 x1 x2 x4 trans shared shared::cta b16"),
    # asynchronous copies
    "cp.async": _s("ca cg shared shared::cta global L2::64B L2::128B L2::256B L2::cache_hint"),
    "cp.async.commit_group": frozenset(),
    "cp.async.wait_group": frozenset(),
    "cp.async.wait_all": frozenset(),
}


def check_supported(module) -> None:
    """Raise PtxUnsupportedError for the first instruction the emulator does not execute: an opcode outside
    SUPPORTED_OPCODES, or a modifier outside that opcode's accepted set. Prototypes have no body to check."""
    for fn in module.functions:
        for ins in fn.instructions:
            accepted = SUPPORTED_OPCODES.get(ins.opcode)
            if accepted is None:
                reason = ("instruction not supported by the emulator" if ins.known
                          else "unknown instruction (not in the PTX ISA tables)")
                raise PtxUnsupportedError(ins.line, ins.name, reason, module.filename, ins.text)
            for m in ins.modifiers:
                if m not in accepted:
                    raise PtxUnsupportedError(ins.line, ins.name, f"modifier .{m} of {ins.opcode} not supported",
                                              module.filename, ins.text)

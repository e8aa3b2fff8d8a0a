"""act's builder of textual MLIR on tensors (linalg, tensor, arith, math).

MLIR's Python bindings are not packaged on Debian, so act writes text that
act-opt parses: the PyTorch exporter (export/, aten/), the example graphs
(examples/graphgen.py) and the compile-time benchmark's graphs
(bench/compile_time/gen_graph.py). Every value is a ranked tensor; `V`
carries its SSA name, shape (None for a dynamic dim, printed `?`) and element
type. Element-wise work and reductions are `linalg.generic` ops whose bodies
are built by `Body`; a `Graph` collects one function body, `func` wraps it.
"""

import math

FLOAT = "f32"


class Sym(int):
    """k * N for a step compiled for every batch size N (export/dynamic.py):
    an int whose value is k times the batch being lowered, so that shape
    arithmetic runs unchanged, printed `?` in types; where the step uses it
    as a size (Graph.size) or a scalar (Graph.const) it is computed from
    the batch at run time. Products with an int, and exact quotients, stay
    symbolic; any other arithmetic gives a plain int, which the exporter's
    check (lowering at two batches must give the same text) refuses."""

    def __new__(cls, k, batch):
        s = super().__new__(cls, k * batch)
        s.k, s.batch = k, batch
        return s

    def __mul__(self, other):
        if type(other) is int:
            return Sym(self.k * other, self.batch) if other else 0
        return int(self) * other

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if type(other) is int and other and self.k % other == 0:
            return Sym(self.k // other, self.batch)
        return int(self) // other

    # (It prints as its value: a Sym written into the step's text by a
    # lowering that does not handle it differs between the exporter's two
    # lowerings, which refuses the step.)


class SymFloat(float):
    """c * N**power (power 1 or -1), a float argument of a traced op that
    depends on the batch (a mean's backward divides by the element count);
    Graph.const computes it at run time in f64, as Python computed it."""

    def __new__(cls, c, power, batch):
        s = super().__new__(cls, c * batch if power == 1 else c / batch)
        s.c, s.power, s.batch = c, power, batch
        return s


def is_dynamic(d):
    return d is None or isinstance(d, Sym)


class V:
    """An SSA value: its name, shape (None for a dynamic dim) and element type."""

    def __init__(self, name, shape, dtype=FLOAT):
        self.name, self.dtype = name, dtype
        self.shape = tuple(d if d is None or isinstance(d, Sym) else int(d) for d in shape)

    @property
    def type(self):
        return ttype(self.shape, self.dtype)

    @property
    def rank(self):
        return len(self.shape)

    @property
    def numel(self):
        """The element count; None if a dim is dynamic."""
        return None if None in self.shape else math.prod(self.shape)

    def __repr__(self):
        return f"{self.name}: {self.type}"


def ttype(shape, dtype=FLOAT):
    if not shape:
        return f"tensor<{dtype}>"
    return f"tensor<{'x'.join('?' if is_dynamic(d) else str(d) for d in shape)}x{dtype}>"


def groups_text(groups):
    """A reassociation, e.g. [[0, 1], [2]]."""
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def amap(rank, results):
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


def dims(n, start=0):
    return [f"d{i}" for i in range(start, start + n)]


def is_float(dtype):
    return dtype.startswith("f") or dtype.startswith("bf")


SPECIAL_BITS = {  # -inf, +inf, NaN
    "f32": ("0xFF800000", "0x7F800000", "0x7FC00000"),
    "f64": ("0xFFF0000000000000", "0x7FF0000000000000", "0x7FF8000000000000"),
    "f16": ("0xFC00", "0x7C00", "0x7E00"),
    "bf16": ("0xFF80", "0x7F80", "0x7FC0"),
}


def scalar_literal(value, dtype):
    if is_float(dtype):
        value = float(value)
        if math.isinf(value) or math.isnan(value):
            # Bit patterns of the type's own width (an f32 pattern given to
            # an f64 constant is a tiny subnormal, not an infinity).
            neg, pos, nan = SPECIAL_BITS[dtype]
            return nan if math.isnan(value) else (neg if value < 0 else pos)
        return f"{value:.17e}" if dtype == "f64" else f"{value:.9e}"
    if dtype == "i1":
        return "1" if value else "0"  # `true : i1` does not parse
    return str(int(value))


class Body:
    """Scalar code inside a linalg.generic region (or, given the graph's own
    lines, at the function's top level: Graph.scalars)."""

    def __init__(self, graph, lines=None):
        self.g, self.lines = graph, [] if lines is None else lines

    def line(self, hint, text):
        """Appends `%r = text` with a fresh %r named after `hint`; returns %r."""
        r = self.g.fresh(hint)
        self.lines.append(f"{r} = {text}")
        return r

    def op(self, name, *args, ty=FLOAT):
        return self.line("t", f"{name} {', '.join(args)} : {ty}")

    def c(self, value, dtype=FLOAT):
        return self.g.const(value, dtype)

    def add(self, a, b): return self.op("arith.addf", a, b)
    def sub(self, a, b): return self.op("arith.subf", a, b)
    def mul(self, a, b): return self.op("arith.mulf", a, b)
    def div(self, a, b): return self.op("arith.divf", a, b)
    def neg(self, a): return self.op("arith.negf", a)
    def max(self, a, b): return self.op("arith.maximumf", a, b)
    def exp(self, a): return self.op("math.exp", a)
    def log(self, a): return self.op("math.log", a)
    def erf(self, a): return self.op("math.erf", a)
    def tanh(self, a): return self.op("math.tanh", a)
    def sqrt(self, a): return self.op("math.sqrt", a)
    def rsqrt(self, a): return self.op("math.rsqrt", a)

    def cmpf(self, pred, a, b):
        return self.line("p", f"arith.cmpf {pred}, {a}, {b} : f32")

    def cmpi(self, pred, a, b, ty):
        return self.line("p", f"arith.cmpi {pred}, {a}, {b} : {ty}")

    def select(self, p, a, b, ty=FLOAT):
        return self.line("t", f"arith.select {p}, {a}, {b} : {ty}")

    def index(self, dim):
        return self.line("i", f"linalg.index {dim} : index")

    def cast(self, op, a, src, dst):
        return self.line("t", f"{op} {a} : {src} to {dst}")

    def index_cast(self, a, ty):
        return self.cast("arith.index_cast", a, "index", ty)

    def andi(self, a, b):
        return self.op("arith.andi", a, b, ty="i1")

    def addi(self, a, b, ty="index"): return self.op("arith.addi", a, b, ty=ty)
    def muli(self, a, b, ty="index"): return self.op("arith.muli", a, b, ty=ty)
    def remui(self, a, b, ty="index"): return self.op("arith.remui", a, b, ty=ty)


class Graph:
    """Emits the ops of one function body."""

    def __init__(self, prefix=""):
        self.lines, self.names, self.consts, self.used = [], {}, {}, set()
        self.prefix = prefix
        # (V, dim) whose size is the batch N of a step compiled for every
        # batch size (Sym dims), and the k * N computed so far.
        self.batch, self.sizes = None, {}

    def fresh(self, hint="v"):
        hint = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in hint) or "v"
        if hint[0].isdigit():
            hint = "v" + hint
        n = self.names.get(hint, 0)
        name = f"%{self.prefix}{hint}"
        while name in self.used:
            n += 1
            name = f"%{self.prefix}{hint}_{n}"
        self.names[hint] = n
        self.used.add(name)
        return name

    def emit(self, line):
        self.lines.append(line)

    def arg(self, hint, shape, dtype=FLOAT):
        """A function argument named after `hint` (pass it to func)."""
        return V(self.fresh(hint), shape, dtype)

    def scalars(self):
        """A Body whose ops go straight into the function body."""
        return Body(self, self.lines)

    def const(self, value, dtype=FLOAT):
        if isinstance(value, (Sym, SymFloat)):
            return self._batch_scalar(value, dtype)
        key = (scalar_literal(value, dtype), dtype)
        if key not in self.consts:
            name = self.fresh("cst")
            self.consts[key] = name
            self.emit(f"{name} = arith.constant {key[0]} : {dtype}")
        return self.consts[key]

    def index_const(self, value):
        return self.const(value, "index")

    def size(self, d):
        """An index SSA value for dim d: k * N at run time for a Sym."""
        if not isinstance(d, Sym):
            return self.index_const(d)
        if d.k not in self.sizes:
            if self.batch is None:
                raise ValueError("a batch-dependent size in a graph without a batch")
            n = self.sizes.get(1) or self.dim(*self.batch, hint="batch")
            self.sizes[1] = n
            if d.k != 1:
                r = self.fresh(f"batch{d.k}")
                self.emit(f"{r} = arith.muli {n}, {self.index_const(d.k)} : index")
                self.sizes[d.k] = r
        return self.sizes[d.k]

    def _batch_scalar(self, value, dtype):
        """A Sym or SymFloat as a `dtype` scalar computed from the batch."""
        key = ("batch", getattr(value, "k", None), getattr(value, "c", None),
               getattr(value, "power", None), dtype)
        if isinstance(value, Sym) and dtype == "index":
            return self.size(value)
        if key in self.consts:
            return self.consts[key]
        b = self.scalars()
        n = b.index_cast(self.size(value if isinstance(value, Sym) else Sym(1, value.batch)),
                         "i64")
        if isinstance(value, Sym):
            r = n if dtype == "i64" else (b.cast("arith.sitofp", n, "i64", dtype)
                                          if is_float(dtype) else
                                          b.cast("arith.trunci", n, "i64", dtype))
        else:
            nf = b.cast("arith.sitofp", n, "i64", "f64")
            c = self.const(value.c, "f64")
            r = b.op("arith.mulf" if value.power == 1 else "arith.divf", c, nf, ty="f64")
            if dtype != "f64":
                r = b.cast("arith.truncf", r, "f64", dtype)
        self.consts[key] = r
        return r

    def dim(self, x, i, hint="dim"):
        """The size of dim i of x (tensor.dim), an index."""
        c = self.index_const(i)
        r = self.fresh(hint)
        self.emit(f"{r} = tensor.dim {x.name}, {c} : {x.type}")
        return r

    # -- tensors ------------------------------------------------------------

    def empty(self, shape, dtype=FLOAT, hint="empty", sizes=None):
        """sizes: per dim, the (V, dim) whose size a dynamic dim takes."""
        dyn = []
        for i, d in enumerate(shape):
            if isinstance(d, Sym):
                dyn.append(self.size(d))
            elif d is None:
                if not sizes or sizes[i] is None:
                    raise ValueError(f"dynamic dim {i} of {ttype(shape, dtype)} has no size")
                dyn.append(self.dim(*sizes[i]))
        r = self.fresh(hint)
        self.emit(f"{r} = tensor.empty({', '.join(dyn)}) : {ttype(shape, dtype)}")
        return V(r, shape, dtype)

    def fill(self, shape, value, dtype=FLOAT, hint="fill", sizes=None):
        c = self.const(value, dtype)
        e = self.empty(shape, dtype, sizes=sizes)
        r = self.fresh(hint)
        self.emit(f"{r} = linalg.fill ins({c} : {dtype}) outs({e.name} : {e.type}) -> {e.type}")
        return V(r, shape, dtype)

    def generic(self, out_shape, inputs, body, out_dtype=FLOAT, iterators=None,
                out_exprs=None, init=None, hint="generic"):
        """inputs: list of (V, index expressions over d0..). body(b, *ins,
        out) returns the scalar to yield. Loops: `iterators` (default: all
        parallel over the output). A dynamic output dim takes its size from
        an input indexed by the same loop."""
        rank = len(iterators) if iterators else len(out_shape)
        iterators = iterators or ["parallel"] * rank
        out_exprs = out_exprs if out_exprs is not None else dims(len(out_shape))
        if init is None:
            sizes = None
            if None in out_shape:
                sizes = [next(((v, j) for v, exprs in inputs for j, x in enumerate(exprs)
                               if x == e and v.shape[j] is None), None) for e in out_exprs]
            init = self.empty(out_shape, out_dtype, sizes=sizes)
        maps = [amap(rank, e) for _, e in inputs] + [amap(rank, out_exprs)]
        b = Body(self)
        args = [self.fresh("a") for _ in inputs]
        out = self.fresh("o")
        result = body(b, *args, out)
        r = self.fresh(hint)
        its = ", ".join(f'"{i}"' for i in iterators)
        head = f"{r} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}}"
        if inputs:
            head += (f" ins({', '.join(v.name for v, _ in inputs)} : "
                     f"{', '.join(v.type for v, _ in inputs)})")
        self.emit(f"{head} outs({init.name} : {init.type}) {{")
        bargs = [f"{a}: {v.dtype}" for a, (v, _) in zip(args, inputs)] + [f"{out}: {init.dtype}"]
        self.emit(f"^bb0({', '.join(bargs)}):")
        for line in b.lines:
            self.emit("  " + line)
        self.emit(f"  linalg.yield {result} : {init.dtype}")
        self.emit(f"}} -> {init.type}")
        return V(r, out_shape, init.dtype)

    def generic_multi(self, out_shapes, out_dtypes, inputs, body, iterators, out_exprs,
                      inits, hint="generic"):
        """A generic with several outputs; body returns a list of scalars."""
        rank = len(iterators)
        maps = [amap(rank, e) for _, e in inputs] + [amap(rank, e) for e in out_exprs]
        b = Body(self)
        args = [self.fresh("a") for _ in inputs]
        outs = [self.fresh("o") for _ in inits]
        results = body(b, *args, *outs)
        r = self.fresh(hint)
        its = ", ".join(f'"{i}"' for i in iterators)
        self.emit(f"{r}:{len(inits)} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                  f"iterator_types = [{its}]}} ins({', '.join(v.name for v, _ in inputs)} : "
                  f"{', '.join(v.type for v, _ in inputs)}) outs({', '.join(i.name for i in inits)} : "
                  f"{', '.join(i.type for i in inits)}) {{")
        bargs = ([f"{a}: {v.dtype}" for a, (v, _) in zip(args, inputs)]
                 + [f"{o}: {i.dtype}" for o, i in zip(outs, inits)])
        self.emit(f"^bb0({', '.join(bargs)}):")
        for line in b.lines:
            self.emit("  " + line)
        self.emit(f"  linalg.yield {', '.join(results)} : {', '.join(i.dtype for i in inits)}")
        self.emit(f"}} -> ({', '.join(i.type for i in inits)})")
        return [V(f"{r}#{k}", s, d) for k, (s, d) in enumerate(zip(out_shapes, out_dtypes))]

    def ew(self, inputs, fn, shape=None, out_dtype=FLOAT, hint="ew"):
        """Element-wise with NumPy broadcasting: inputs are V, Python numbers
        (constants) or (V, output dims) pairs placing the V's dims at those
        dims of the result; fn(b, *scalars) returns the result scalar."""
        tensors = [x if isinstance(x, tuple) else (x, None)
                   for x in inputs if isinstance(x, (V, tuple))]
        if shape is None:
            shape = broadcast_shape([t.shape for t, _ in tensors], [p for _, p in tensors])
        rank = len(shape)
        ins, order = [], []
        for x in inputs:
            if isinstance(x, (V, tuple)):
                x, places = x if isinstance(x, tuple) else (x, None)
                places = places if places is not None else range(rank - x.rank, rank)
                exprs = ["0" if (d == 1 and shape[k] != 1) else f"d{k}"
                         for d, k in zip(x.shape, places)]
                order.append(len(ins))
                ins.append((x, exprs))
            else:
                order.append(x)

        def body(b, *args):
            scalars = [args[o] if isinstance(x, (V, tuple)) else b.c(x)
                       for x, o in zip(inputs, order)]
            return fn(b, *scalars)
        return self.generic(shape, ins, body, out_dtype=out_dtype, hint=hint)

    def reduce(self, x, axes, keepdim=False, kind="add", hint="sum", acc=None):
        """Sum (or max) of x over `axes`; a sum of f32 x with acc="f64"
        accumulates (and returns) f64."""
        axes = sorted(a % x.rank for a in axes) if x.rank else []
        keep = [i for i in range(x.rank) if i not in axes]
        out_shape = tuple(x.shape[i] for i in keep)
        integer = kind == "add" and x.dtype in ("i8", "i32", "i64")
        dtype = acc or (x.dtype if integer else FLOAT)
        init = self.fill(out_shape, 0 if integer else 0.0 if kind == "add" else -math.inf,
                         dtype=dtype, sizes=[(x, i) for i in keep])
        its = ["reduction" if i in axes else "parallel" for i in range(x.rank)]
        if integer:
            fn = lambda b, a, o: b.op("arith.addi", a, o, ty=dtype)  # noqa: E731
        elif kind != "add":
            fn = lambda b, a, o: b.max(a, o)  # noqa: E731
        elif acc:
            fn = lambda b, a, o: b.op("arith.addf", b.cast("arith.extf", a, x.dtype, acc), o,  # noqa: E731
                                      ty=acc)
        else:
            fn = lambda b, a, o: b.add(a, o)  # noqa: E731
        r = self.generic(out_shape, [(x, dims(x.rank))], fn, out_dtype=dtype, iterators=its,
                         out_exprs=[f"d{i}" for i in keep], init=init, hint=hint)
        if keepdim:
            r = self.reshape(r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
        return r

    def _contraction(self, op, a, b, shape, hint, sizes):
        acc = self.fill(shape, 0.0, sizes=sizes)
        r = self.fresh(hint)
        self.emit(f"{r} = linalg.{op} ins({a.name}, {b.name} : {a.type}, {b.type}) "
                  f"outs({acc.name} : {acc.type}) -> {acc.type}")
        return V(r, shape)

    def matmul(self, a, b, hint="mm"):
        return self._contraction("matmul", a, b, (a.shape[0], b.shape[1]), hint,
                                 [(a, 0), (b, 1)])

    def batch_matmul(self, a, b, hint="bmm"):
        return self._contraction("batch_matmul", a, b, (a.shape[0], a.shape[1], b.shape[2]),
                                 hint, [(a, 0), (a, 1), (b, 2)])

    def transpose(self, a, perm, hint="transpose"):
        perm = [p % a.rank for p in perm]
        if perm == list(range(a.rank)):
            return a
        shape = tuple(a.shape[p] for p in perm)
        init = self.empty(shape, a.dtype, sizes=[(a, p) for p in perm])
        r = self.fresh(hint)
        self.emit(f"{r} = linalg.transpose ins({a.name} : {a.type}) outs({init.name} : {init.type}) "
                  f"permutation = [{', '.join(map(str, perm))}]")
        return V(r, shape, a.dtype)

    def collapse_shape(self, x, groups, hint="view"):
        """Merges each group of adjacent dims of x (groups: [[0, 1], [2]])."""
        shape = tuple(None if any(x.shape[i] is None for i in g)
                      else math.prod(x.shape[i] for i in g) for g in groups)
        r = self.fresh(hint)
        out = V(r, shape, x.dtype)
        self.emit(f"{r} = tensor.collapse_shape {x.name} {groups_text(groups)} : "
                  f"{x.type} into {out.type}")
        return out

    def expand_shape(self, x, groups, shape, hint="view"):
        """Splits dim i of x into the dims groups[i] of `shape` (static, or
        Sym dims of the batch)."""
        if None in shape:
            raise ValueError("expand_shape: dynamic output dims are not supported")
        sizes = [self._size_text(d) for d in shape]
        r = self.fresh(hint)
        out = V(r, shape, x.dtype)
        self.emit(f"{r} = tensor.expand_shape {x.name} {groups_text(groups)} output_shape "
                  f"[{', '.join(sizes)}] : {x.type} into {out.type}")
        return out

    def _size_text(self, d):
        """A static size as written in an op's size list, or the SSA value
        of a Sym's k * N."""
        return self.size(d) if isinstance(d, Sym) else str(d)

    def reshape(self, x, shape, hint="view"):
        """Row-major reshape of x through one dim (collapse_shape,
        expand_shape: views after bufferization); a leading batch dim that
        both shapes have stays where it is."""
        shape = tuple(d if isinstance(d, Sym) else int(d) for d in shape)
        if shape == x.shape and list(map(is_dynamic, shape)) == list(map(is_dynamic, x.shape)):
            return x
        assert math.prod(shape) == x.numel, (x.shape, shape)
        if (x.rank > 1 and len(shape) > 1 and isinstance(x.shape[0], Sym)
                and isinstance(shape[0], Sym) and x.shape[0].k == shape[0].k):
            inner = x
            if x.rank > 2:
                inner = self.collapse_shape(x, [[0], list(range(1, x.rank))], hint)
            if len(shape) == 2:
                return inner
            return self.expand_shape(inner, [[0], list(range(1, len(shape)))], shape, hint)
        flat = x
        if x.rank > 1:
            flat = self.collapse_shape(x, [list(range(x.rank))], hint)
        elif x.rank == 0:
            flat = self.expand_shape(x, [], (1,), hint)
        if len(shape) == 1:
            return flat
        if len(shape) == 0:
            return self.collapse_shape(flat, [], hint)
        return self.expand_shape(flat, [list(range(len(shape)))], shape, hint)

    def extract_slice(self, x, offsets, sizes, strides=None, hint="slice"):
        strides = strides or [1] * x.rank
        r = self.fresh(hint)
        out = V(r, sizes, x.dtype)
        self.emit(f"{r} = tensor.extract_slice {x.name}[{', '.join(map(str, offsets))}] "
                  f"[{', '.join(map(self._size_text, sizes))}] [{', '.join(map(str, strides))}] : "
                  f"{x.type} to {out.type}")
        return out

    def insert_slice(self, src, dest, offsets, strides=None, hint="insert"):
        strides = strides or [1] * src.rank
        r = self.fresh(hint)
        self.emit(f"{r} = tensor.insert_slice {src.name} into {dest.name}"
                  f"[{', '.join(map(str, offsets))}] [{', '.join(map(self._size_text, src.shape))}] "
                  f"[{', '.join(map(str, strides))}] : {src.type} into {dest.type}")
        return V(r, dest.shape, dest.dtype)

    def pad(self, x, low, high, value=0.0, hint="pad"):
        if not any(low) and not any(high):
            return x
        shape = tuple(d if not l and not h else d + l + h for d, l, h in zip(x.shape, low, high))
        c = self.const(value, x.dtype)
        r = self.fresh(hint)
        out = V(r, shape, x.dtype)
        self.emit(f"{r} = tensor.pad {x.name} low[{', '.join(map(str, low))}] "
                  f"high[{', '.join(map(str, high))}] {{")
        self.emit(f"^bb0({', '.join(f'%{hint}_i{i}: index' for i in range(x.rank))}):")
        self.emit(f"  tensor.yield {c} : {x.dtype}")
        self.emit(f"}} : {x.type} to {out.type}")
        return out

    def conv2d(self, x, w, strides, dilations=(1, 1), groups=1, shape=None, hint="conv"):
        """NCHW x FCHW correlation of an already padded input: y[n, f, i, j]
        = sum over the group's channels c and the window of x[n, (f floordiv
        F/G) * C/G + c, i * s + u * d, j * s + v * d] * w[f, c, u, v].
        linalg.conv_2d_nchw_fchw, or with groups linalg.conv_2d_ngchw_gfchw
        over the channel dims split by group. `shape` (default: every window
        that fits) may be smaller than what fits."""
        n, c, h, wd = x.shape
        f, cg, kh, kw = w.shape
        shape = tuple(shape or (n, f, (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1,
                                (wd - dilations[1] * (kw - 1) - 1) // strides[1] + 1))
        attrs = (f"{{dilations = dense<[{dilations[0]}, {dilations[1]}]> : tensor<2xi64>, "
                 f"strides = dense<[{strides[0]}, {strides[1]}]> : tensor<2xi64>}}")
        if groups == 1:
            acc = self.fill(shape, 0.0)
            r = self.fresh(hint)
            self.emit(f"{r} = linalg.conv_2d_nchw_fchw {attrs} "
                      f"ins({x.name}, {w.name} : {x.type}, {w.type}) outs({acc.name} : {acc.type}) "
                      f"-> {acc.type}")
            return V(r, shape)
        xg = self.expand_shape(x, [[0], [1, 2], [3], [4]], (n, groups, c // groups, h, wd), hint)
        wg = self.expand_shape(w, [[0, 1], [2], [3], [4]], (groups, f // groups, cg, kh, kw), hint)
        gshape = (shape[0], groups, f // groups) + shape[2:]
        acc = self.fill(gshape, 0.0)
        r = self.fresh(hint)
        self.emit(f"{r} = linalg.conv_2d_ngchw_gfchw {attrs} "
                  f"ins({xg.name}, {wg.name} : {xg.type}, {wg.type}) outs({acc.name} : {acc.type}) "
                  f"-> {acc.type}")
        return self.collapse_shape(V(r, gshape), [[0], [1, 2], [3], [4]], hint)


def broadcast_shape(shapes, places=None):
    """NumPy's broadcast of `shapes`; places[k], where given, lists the
    result dims that shape k's dims sit at (instead of the trailing ones)."""
    places = places or [None] * len(shapes)
    rank = max([len(s) for s, p in zip(shapes, places) if p is None]
               + [max(p) + 1 for p in places if p], default=0)
    out = [1] * rank
    for s, p in zip(shapes, places):
        for d, j in zip(s, p if p is not None else range(rank - len(s), rank)):
            if d != 1:
                if out[j] not in (1, d):
                    raise ValueError(f"shapes {shapes} do not broadcast")
                out[j] = d
    return tuple(out)


def func(name, args, results, body_lines, attrs=None, result_attrs=None, arg_attrs=None):
    """A func.func with the given body; args and results are V."""
    arg_attrs = arg_attrs or {}
    result_attrs = result_attrs or {}
    a = ", ".join(f"{v.name}: {v.type}" + (f" {{{arg_attrs[i]}}}" if i in arg_attrs else "")
                  for i, v in enumerate(args))
    r = ", ".join(v.type + (f" {{{result_attrs[i]}}}" if i in result_attrs else "")
                  for i, v in enumerate(results))
    head = f"func.func @{name}({a}) -> ({r})"
    if attrs:
        head += f" attributes {{{attrs}}}"
    body = "\n".join("  " + l for l in body_lines)
    ret = f"  return {', '.join(v.name for v in results)} : {', '.join(v.type for v in results)}"
    return f"{head} {{\n{body}\n{ret}\n}}\n"

//===- ActAttrs.td - act encodings -------------------------*- tablegen -*-===//
//
// The encodings. Each is an attribute implementing EncodingAttrInterface.
//
//===----------------------------------------------------------------------===//

#ifndef ACT_DIALECT_ACT_IR_ACTATTRS_TD
#define ACT_DIALECT_ACT_IR_ACTATTRS_TD

include "act/Dialect/Act/IR/ActDialect.td"
include "act/Dialect/Act/IR/ActInterfaces.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Act_Rounding : I32EnumAttr<"Rounding", "rounding of quantized values", [
    I32EnumAttrCase<"Stochastic", 0, "stochastic">,
    I32EnumAttrCase<"Nearest", 1, "nearest">]> {
  let cppNamespace = "::mlir::act";
  let genSpecializedAttr = 0;
}

def Act_StatFormat : I32EnumAttr<"StatFormat",
                                 "format of quantization group statistics", [
    I32EnumAttrCase<"F32", 0, "f32">,
    I32EnumAttrCase<"BF16", 1, "bf16">]> {
  let cppNamespace = "::mlir::act";
  let genSpecializedAttr = 0;
}

def Act_FloatFormat : I32EnumAttr<"FloatFormat", "reduced floating format", [
    I32EnumAttrCase<"F16", 0, "f16">,
    I32EnumAttrCase<"BF16", 1, "bf16">,
    I32EnumAttrCase<"FP10", 2, "fp10">,
    I32EnumAttrCase<"E4M3", 3, "e4m3">,
    I32EnumAttrCase<"E5M2", 4, "e5m2">]> {
  let cppNamespace = "::mlir::act";
  let genSpecializedAttr = 0;
}

def Act_MaskPredicate : I32EnumAttr<"MaskPredicate", "predicate kept by a mask", [
    I32EnumAttrCase<"Positive", 0, "positive">,
    I32EnumAttrCase<"NonNegative", 1, "nonnegative">,
    I32EnumAttrCase<"NonZero", 2, "nonzero">]> {
  let cppNamespace = "::mlir::act";
  let genSpecializedAttr = 0;
}

def Act_SpatialLayout : I32EnumAttr<"SpatialLayout", "where a map's spatial dimensions are", [
    I32EnumAttrCase<"NCHW", 0, "nchw">,
    I32EnumAttrCase<"NHWC", 1, "nhwc">]> {
  let cppNamespace = "::mlir::act";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Encodings
//===----------------------------------------------------------------------===//

/// A fraction in [0, 1], written as a float literal (default 1.0).
def Act_DensityParameter
    : AttrOrTypeParameter<"::llvm::APFloat",
                          "expected fraction of nonzero elements"> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    // -0.0 is the fraction 0 (one spelling, and one attribute, for it).
    return ::llvm::APFloat(value == 0.0 ? 0.0 : value);
  }() }];
  // Shortest form, but always a float literal that the parser reads back
  // (`0.0`, never the integer literal `0`).
  let printer = [{ [&] {
    std::string text;
    ::llvm::raw_string_ostream(text)
        << ::llvm::format("%g", $_self.convertToDouble());
    // MLIR's float literals need the dot: `1e-07` becomes `1.0e-07`.
    if (::llvm::StringRef(text).find('.') == ::llvm::StringRef::npos)
      text.insert(std::min(text.find('e'), text.size()), ".0");
    $_printer << text;
  }() }];
  let defaultValue = "::llvm::APFloat(1.0)";
}

class Act_EncodingAttr<string name, string attrMnemonic>
    : AttrDef<Act_Dialect, name,
              [DeclareAttrInterfaceMethods<Act_EncodingAttrInterface>]> {
  let mnemonic = attrMnemonic;
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Act_QuantEncoding
    : AttrDef<Act_Dialect, "QuantEncoding",
              [DeclareAttrInterfaceMethods<Act_EncodingAttrInterface,
                                           ["getQuantizerBits",
                                            "withQuantizerBits"]>]> {
  let mnemonic = "quant";
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let summary = "per-group min/scale integer quantization (GACT, ActNN)";
  let description = [{
    Splits the flattened tensor into groups of `group` consecutive elements
    (the last group may be shorter) and stores, per group, the minimum and
    the scale `(max - min) / (2^bits - 1)` as two f32 values, and per element
    the `bits`-bit code `round((x - min) / scale)`, packed `32 / bits` to a
    32-bit word. `rounding` is `stochastic` (Philox-driven, 8 random bits per
    element: unbiased up to 1/512 of a step) or
    `nearest`. Decoding yields `min + code * scale` in the tensor's element
    type. Lossy.

    `stats = bf16` stores the two statistics as bfloat16 (their bits as
    `i16`: 4 bytes a group instead of 8, 0.125 bits an element at group
    256 instead of 0.25): the minimum rounded down and the scale rounded up
    to bf16 (the codes' grid still covers the group's range; the codes are
    computed on the stored values, so rounding stays unbiased), see
    docs/Encodings.md.

    ```mlir
    #act.quant<bits = 4>                                   // group 256, stochastic
    #act.quant<bits = 2, group = 128, rounding = nearest>
    #act.quant<bits = 2, stats = bf16>
    ```
  }];
  let parameters = (ins
    "unsigned":$bits,
    DefaultValuedParameter<"int64_t", "256">:$group,
    DefaultValuedParameter<"::mlir::act::Rounding",
                           "::mlir::act::Rounding::Stochastic">:$rounding,
    DefaultValuedParameter<"::mlir::act::StatFormat",
                           "::mlir::act::StatFormat::F32">:$stats);
}

def Act_RuntimeQuantEncoding
    : AttrDef<Act_Dialect, "RuntimeQuantEncoding",
              [DeclareAttrInterfaceMethods<Act_EncodingAttrInterface,
                                           ["getQuantizerBits",
                                            "withQuantizerBits",
                                            "hasRuntimeBits"]>]> {
  let mnemonic = "runtime_quant";
  let assemblyFormat = "`<` `[` $choices `]` `,` struct($bits, $group, $rounding, $stats) `>`";
  let genVerifyDecl = 1;
  let summary = "#act.quant at a bit width chosen at run time";
  let description = [{
    #act.quant whose bit width is an operand of `act.encode` (`bits`, an
    `i32` the step reads from its `act.bits` argument), one of `choices`
    (each 1, 2, 4, 8, or 32: stored as it is, not compressed), so that a
    re-allocation (GACT's adaptive loop) changes the widths by changing an
    argument instead of recompiling. At width `b < 32` the stored codes and
    group statistics are bit for bit #act.quant<bits = b>'s (same group,
    rounding and random stream); the storage is the payload at that width
    (a dynamically sized `tensor<? x i32>`), the group statistics and the
    width itself (`tensor<1 x i32>`), read by the decode. `bits` is the
    width the step is planned for: what the memory report and the static
    peak assume, and the `act.bits` argument's default.

    ```mlir
    #act.runtime_quant<[1, 2, 4, 8, 32], bits = 4>
    #act.runtime_quant<[2, 4], bits = 2, group = 128, rounding = nearest>
    #act.runtime_quant<[1, 2, 4, 8], bits = 2, stats = bf16>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"unsigned">:$choices,
    "unsigned":$bits,
    DefaultValuedParameter<"int64_t", "256">:$group,
    DefaultValuedParameter<"::mlir::act::Rounding",
                           "::mlir::act::Rounding::Stochastic">:$rounding,
    DefaultValuedParameter<"::mlir::act::StatFormat",
                           "::mlir::act::StatFormat::F32">:$stats);
  let extraClassDeclaration = [{
    /// #act.quant at `width` (< 32), the same group, rounding and stats.
    QuantEncodingAttr getQuantAt(unsigned width) const;
  }];
}

def Act_FloatEncoding : Act_EncodingAttr<"FloatEncoding", "float"> {
  let summary = "delayed precision reduction to a narrow float (Gist)";
  let description = [{
    Stores every element in a narrower floating format: `f16` and `bf16`
    (two per 32-bit word), `fp10` (1 sign, 5 exponent, 4 mantissa bits; three
    per word, the top two bits unused), `e4m3` and `e5m2` (four per word).
    Decoding widens back to the tensor's element type. Lossless only when the
    tensor's element type is the format itself.

    ```mlir
    #act.float<format = fp10>
    ```
  }];
  let parameters = (ins "::mlir::act::FloatFormat":$format);
  let extraClassDeclaration = [{
    /// Bits one element occupies in the payload.
    unsigned getElementBits() const;
    /// Elements packed into one 32-bit payload word.
    unsigned getElementsPerWord() const;
    /// True if the codes are whole bytes (8 or 16 bits): stored as an array
    /// of them (the bytes of the word packing without its tail padding).
    bool isByteArray() const;
  }];
}

def Act_MaskEncoding : Act_EncodingAttr<"MaskEncoding", "mask"> {
  let summary = "one bit per element: a predicate of the value (Gist's ReLU mask)";
  let description = [{
    Keeps only `predicate(x)` for every element, one bit each, packed 32 to a
    word: `positive` is `x > 0`, `nonnegative` is `x >= 0`, `nonzero` is
    `x != 0`. Decoding yields an `i1` tensor of the same shape: exactly what
    the backward pass of ReLU-like ops reads, so the encoding is lossless.

    ```mlir
    #act.mask<predicate = positive>
    ```
  }];
  let parameters = (ins "::mlir::act::MaskPredicate":$predicate);
}

def Act_FewBitEncoding : Act_EncodingAttr<"FewBitEncoding", "fewbit"> {
  let summary = "the interval of a value; decodes to a function of it (Few-bit backward)";
  let description = [{
    Keeps, for every element `x`, only the index of the interval it falls
    in: `code = #{j : x >= boundaries[j]}` (`2^bits - 1` sorted
    boundaries; NaN gets code 0), `bits` bits each, packed `32 / bits` to a
    32-bit word. Decoding yields `values[code]` (`2^bits` values) in the
    tensor's element type: not the value, but the piecewise-constant
    approximation of the function `phi(x)` through which the backward reads
    it (an activation's derivative; Few-bit backward,
    papers/fewbit-backward.txt). act-insert-encode-decode finds `phi` in the
    backward graph and computes the optimal table for it
    (act/Analysis/FewBit.h); `act-fewbit-table` prints tables. Lossy,
    deterministic, no metadata: the table is in the IR.

    ```mlir
    #act.fewbit<bits = 1, boundaries = [0.0], values = [0.0, 1.0]>
    ```
  }];
  let parameters = (ins "unsigned":$bits,
                        "::mlir::DenseF32ArrayAttr":$boundaries,
                        "::mlir::DenseF32ArrayAttr":$values);
  let extraClassDeclaration = [{
    /// Elements packed into one 32-bit payload word.
    unsigned getElementsPerWord() const { return 32 / getBits(); }
  }];
}

def Act_IndexEncoding : Act_EncodingAttr<"IndexEncoding", "index"> {
  let summary = "small non-negative integers in a few bits (Gist's narrow pool indices)";
  let description = [{
    Stores every element of an integer tensor as its low `bits` bits,
    packed `32 / bits` to a 32-bit word; decoding zero-extends them back.
    Lossless for values in [0, 2^bits), which is what the encoding promises:
    act-insert-encode-decode chooses it only for values it proves are in
    that range (max-pool indices, which act's exporter keeps window-local:
    4 bits for a 3x3 window, 2 for 2x2). No metadata.

    ```mlir
    #act.index<bits = 2>
    ```
  }];
  let parameters = (ins "unsigned":$bits);
  let extraClassDeclaration = [{
    /// Elements packed into one 32-bit payload word.
    unsigned getElementsPerWord() const { return 32 / getBits(); }
  }];
}

def Act_SparseEncoding : Act_EncodingAttr<"SparseEncoding", "sparse"> {
  let summary = "a bitmap of the nonzero elements and their values (Gist's SSDC)";
  let description = [{
    Stores a bitmap with one bit per element (set when the element's bits
    are not all zero: -0.0 and NaN count as nonzero) and the values of the
    set elements, in element order, at full width. Decoding puts them back
    and zeros elsewhere: bitwise lossless for every value. When the data
    is too dense for the bitmap to pay (more than `n - ceil(n / 32)`
    nonzeros of `n`), the encode stores the values densely instead and an
    empty bitmap (the dense fallback), so the storage never exceeds the
    tensor's own bytes.

    With `format`, the stored values (the nonzeros, or every element in the
    dense fallback) are themselves stored as `#act.float<format = ...>`
    stores a tensor: Gist's delayed precision reduction applied over its
    sparse storage (papers/gist.txt, "We also apply it over SSDC encoding,
    compressing the non-zero values array"). The bitmap stays exact, so the
    zeros stay zeros; the nonzero values are rounded as the float encoding
    rounds them. Lossy, unless the tensor's elements are the format itself.

    The storage's size depends on the data: the encode allocates exactly
    what it needs, which is what act-run measures. `density` (the expected
    fraction of nonzero elements, in [0, 1]) is only what static estimates
    assume (the memory report and the bit allocator mark those bytes as
    estimated); act-insert-encode-decode sets it from the density it
    measured or was told.

    ```mlir
    #act.sparse<density = 0.5>
    #act.sparse<density = 0.5, format = fp10>
    ```
  }];
  let parameters = (ins Act_DensityParameter:$density,
                        OptionalParameter<"std::optional<::mlir::act::FloatFormat>",
                                          "the values' narrow float format">:$format);
  let assemblyFormat = "(`<` struct(params)^ `>`)?";
  let extraClassDeclaration = [{
    /// The expected fraction of nonzero elements, as a double.
    double getDensityValue() const { return getDensity().convertToDouble(); }
    /// The encoding the stored values are stored by (#act.float of
    /// `format`), or null when they are stored at full width.
    FloatEncodingAttr getValuesEncoding() const;
  }];
}

def Act_DivisionEncoding
    : AttrDef<Act_Dialect, "DivisionEncoding",
              [DeclareAttrInterfaceMethods<Act_EncodingAttrInterface,
                                           ["getShapedStorageLayout",
                                            "getQuantizerBits",
                                            "withQuantizerBits"]>]> {
  let mnemonic = "division";
  let summary = "block averages kept exactly, the residual quantized (DIVISION)";
  let description = [{
    DIVISION's dual precision (papers/division-dual-activation-precision.txt,
    Sec. 4) for rank-4 activation maps (`layout`: `nchw`, the default, or
    `nhwc`). The low-frequency part is the average of every `block` x
    `block` spatial block of each map, kept in the tensor's element type
    (the sum in f32, in row-major order within the block, divided by the
    block's element count: a block cut by the map's border averages the
    elements it has). The high-frequency residual, `x` minus its block's
    average (nearest upsampling), computed in f32, is stored as
    `#act.quant<bits, group, rounding>` of the residual tensor (groups over
    the row-major flattened index, stochastic rounding from the value's
    Philox stream by default). Decoding yields `average + dequantized
    residual`, in the tensor's element type. Lossy.

    Storage: the quant payload and metadata of the residual, then the block
    averages, tensor<N x C x ceil(H/block) x ceil(W/block)> (NHWC:
    N x ceil(H/block) x ceil(W/block) x C); reports count the averages as
    payload (element data, not per-group side data). Compression of f32 maps is about
    (block^-2 + bits/32 + 2/group)^-1: 11.6x at the defaults (the paper's
    (B^-2 + Q/32)^-1 = 12.8x counts no per-group metadata). Spatial
    dimensions must be static.

    ```mlir
    #act.division<block = 8, bits = 2>
    #act.division<block = 4, bits = 2, group = 1024, layout = nhwc>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "8">:$block,
    DefaultValuedParameter<"unsigned", "2">:$bits,
    DefaultValuedParameter<"int64_t", "256">:$group,
    DefaultValuedParameter<"::mlir::act::Rounding",
                           "::mlir::act::Rounding::Stochastic">:$rounding,
    DefaultValuedParameter<"::mlir::act::SpatialLayout",
                           "::mlir::act::SpatialLayout::NCHW">:$layout);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The quantization of the residual.
    QuantEncodingAttr getResidualEncoding() const;
    /// The dimensions of H and W in the tensor.
    std::pair<unsigned, unsigned> getSpatialDims() const;
    /// The shape of the block averages of a map of `shape`.
    ::llvm::SmallVector<int64_t> getAveragesShape(
        ::llvm::ArrayRef<int64_t> shape) const;
  }];
}

def Act_RecomputeEncoding : Act_EncodingAttr<"RecomputeEncoding", "recompute"> {
  let summary = "nothing stored: the backward recomputes the value";
  let description = [{
    Stores nothing (zero bytes). The backward recomputes the value from
    what it has (the step's arguments, constants and the other saved
    values, decoded) by a copy of the forward ops that computed it, and
    `act.recomputed` marks the result as this saved value's. Lossless when
    the other saved values it reads are (the same ops on the same inputs
    give the same bits). act-insert-encode-decode chooses it with
    `recompute-flops-per-byte` for values whose recomputation costs at most
    that many operations per byte they would take. Values of this encoding
    are read through `act.recomputed`, never `act.decode`.

    ```mlir
    #act.recompute
    ```
  }];
  let parameters = (ins);
  let assemblyFormat = "";
}

#endif // ACT_DIALECT_ACT_IR_ACTATTRS_TD

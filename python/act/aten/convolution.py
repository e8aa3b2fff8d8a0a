"""Contractions: matmuls, and convolutions (1-3 dimensions, grouped,
dilated, transposed) with their input and weight gradients."""
from .core import lowering, require

__all__ = ['addmm', 'baddbmm', 'bmm', 'convolution', 'convolution_backward', 'mm']


@lowering("aten.mm.default")
def mm(g, node, a, b):
    return g.matmul(a, b, hint=node.name)


@lowering("aten.bmm.default")
def bmm(g, node, a, b):
    return g.batch_matmul(a, b, hint=node.name)


def _scaled_sum(g, node, prod, bias, beta, alpha):
    """alpha * prod + beta * bias (bias ignored when beta is 0, as in
    PyTorch)."""
    def body(bb, p, c):
        if alpha != 1:
            p = bb.mul(p, bb.c(alpha))
        if beta == 0:
            return p
        if beta != 1:
            c = bb.mul(c, bb.c(beta))
        return bb.add(p, c)
    return g.ew([prod, bias], body, hint=node.name)


@lowering("aten.baddbmm.default")
def baddbmm(g, node, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(g, node, g.batch_matmul(a, b), bias, beta, alpha)


@lowering("aten.addmm.default")
def addmm(g, node, bias, a, b, beta=1, alpha=1):
    return _scaled_sum(g, node, g.matmul(a, b), bias, beta, alpha)


def _conv_args(node, stride, padding, dilation, transposed, output_padding, groups, w):
    require(w.rank in (4, 5), node, f"a {w.rank - 2}-d convolution (only 1-d, 2-d and 3-d)")
    require(w.rank == 4 or not transposed, node, "a transposed 3-d convolution")
    return list(stride), list(padding), list(dilation)


def _correlate(g, xp, w, shape, stride, dilation, groups, hint):
    """y[n, f, i, j] = sum over the group's channels c and the window of
    xp[n, (f floordiv F/G) * C/G + c, i * s + u * d, j * s + v * d] *
    w[f, c, u, v], for an already padded xp and an output `shape`: a linalg
    named convolution (mlir.Graph.conv2d)."""
    return g.conv2d(xp, w, stride, dilation, groups, shape, hint=hint)


def _input_gradient(g, grad, w, shape, stride, padding, dilation, groups, hint):
    """The input gradient of a convolution with weight w (F, C/G, k) whose
    output gradient is grad, for an input of `shape`: the correlation (stride
    1, the convolution's dilation) of the stride-dilated, padded gradient
    with the weight read backwards and with its two channel dims swapped
    within each group. (Also the forward of a transposed convolution.)"""
    (s0, s1), (p0, p1), (e0, e1) = stride, padding, dilation
    n, c, h, wd = shape
    f, cg, k0, k1 = w.shape
    fg = f // groups
    oh, ow = grad.shape[2:]
    r0, r1 = (k0 - 1) * e0, (k1 - 1) * e1
    lh = max(h + p0 + r0, r0 + (oh - 1) * s0 + 1)
    lw = max(wd + p1 + r1, r1 + (ow - 1) * s1 + 1)
    if p0 <= r0 and p1 <= r1:  # (padding within the kernel's reach: the usual case)
        gp = g.insert_slice(grad, g.fill((n, f, h + r0, wd + r1), 0.0),
                            [0, 0, r0 - p0, r1 - p1], [1, 1, s0, s1], hint=hint + "_dilated")
    else:
        gp = g.insert_slice(grad, g.fill((n, f, lh, lw), 0.0), [0, 0, r0, r1], [1, 1, s0, s1],
                            hint=hint + "_dilated")
        gp = g.extract_slice(gp, [0, 0, p0, p1], [n, f, h + r0, wd + r1], hint=hint + "_window")
    # flipped[g * C/G + c, f, u, v] = w[g * F/G + f, c, k0 - 1 - u, k1 - 1 - v]
    fexpr = f"(d0 floordiv {cg}) * {fg} + d1" if groups > 1 else "d1"
    cexpr = f"d0 mod {cg}" if groups > 1 else "d0"
    flipped = g.generic((c, fg, k0, k1), [(w, [fexpr, cexpr, f"{k0 - 1} - d2", f"{k1 - 1} - d3"])],
                        lambda b, u, o: u, hint=hint + "_flipped")
    return g.conv2d(gp, flipped, (1, 1), (e0, e1), groups, tuple(shape), hint=hint)


def _weight_gradient(g, grad, xp, wshape, stride, dilation, groups, hint):
    """The weight gradient (wshape: F, C/G, k) of a convolution of the padded
    input xp whose output gradient is grad: gw[f, c, u, v] = sum over n, i, j
    of grad[n, f, i, j] * xp[n, (f floordiv F/G) * C/G + c, i * s + u * d,
    j * s + v * d]. A convolution too, with the batch and channel dims
    swapped: xp's channels (C/G, G x N) as its batch and channels, grad (F,
    N) as its weight, the dilation as its stride and the stride as its
    dilation."""
    (s0, s1), (e0, e1) = stride, dilation
    f, cg, k0, k1 = wshape
    n, c = xp.shape[:2]
    oh, ow = grad.shape[2:]
    # Only the rows and columns some window reads.
    eh, ew = (k0 - 1) * e0 + (oh - 1) * s0 + 1, (k1 - 1) * e1 + (ow - 1) * s1 + 1
    if (eh, ew) != tuple(xp.shape[2:]):
        xp = g.extract_slice(xp, [0] * 4, [n, c, eh, ew], hint=hint + "_window")
    if groups == 1:
        xt = g.transpose(xp, [1, 0, 2, 3], hint=hint + "_input_t")
    else:
        x5 = g.expand_shape(xp, [[0], [1, 2], [3], [4]], (n, groups, cg, eh, ew),
                            hint=hint + "_groups")
        xt = g.collapse_shape(g.transpose(x5, [2, 1, 0, 3, 4], hint=hint + "_input_t"),
                              [[0], [1, 2], [3], [4]], hint=hint + "_input_t")
    gt = g.transpose(grad, [1, 0, 2, 3], hint=hint + "_grad_t")
    out = g.conv2d(xt, gt, (e0, e1), (s0, s1), groups, (cg, f, k0, k1), hint=hint)
    return g.transpose(out, [1, 0, 2, 3], hint=hint + "_t")


def _depth_planes(g, x, kd, do, sd, ed, hint):
    """The (N Do) x C x H x W planes of a depth-padded N x C x D x H x W
    tensor that depth tap kd of a 3-d convolution reads: depths kd * ed +
    od * sd for od < Do, output depths leading the batch."""
    n, c, _, h, w = x.shape
    planes = g.extract_slice(x, [0, 0, kd * ed, 0, 0], [n, c, do, h, w], [1, 1, sd, 1, 1],
                             hint=hint + f"_depth{kd}")
    planes = g.transpose(planes, [0, 2, 1, 3, 4], hint=hint + f"_depth{kd}_t")
    return g.reshape(planes, (n * do, c, h, w), hint=hint + f"_planes{kd}")


def _from_planes(g, y, n, hint):
    """(N Do) x F x H x W back to N x F x Do x H x W."""
    nd, f, h, w = y.shape
    y = g.reshape(y, (n, nd // n, f, h, w), hint=hint + "_depths")
    return g.transpose(y, [0, 2, 1, 3, 4], hint=hint + "_ncdhw")


def _tap(g, w, kd, hint):
    """Depth tap kd of a 3-d convolution's weight: F x C/G x kh x kw."""
    f, cg, _, kh, kw = w.shape
    tap = g.extract_slice(w, [0, 0, kd, 0, 0], [f, cg, 1, kh, kw], hint=hint + f"_tap{kd}")
    return g.reshape(tap, (f, cg, kh, kw), hint=hint + f"_tap{kd}_2d")


def _add(g, a, b, hint):
    return b if a is None else g.ew([a, b], lambda bb, u, v: bb.add(u, v), hint=hint)


def _conv3d(g, node, x, w, bias, stride, padding, dilation, groups):
    """A 3-d convolution as 2-d ones: output depth od sums, over the depth
    taps kd, the 2-d convolution of input depth kd * ed + od * sd (of the
    depth-padded input) with the weight's tap kd; each tap one 2-d
    convolution over all (N, Do) planes as its batch."""
    (sd, sh, sw), (pd, ph, pw), (ed, eh, ew) = stride, padding, dilation
    n, _, d, _, _ = x.shape
    kd = w.shape[2]
    do = (d + 2 * pd - ed * (kd - 1) - 1) // sd + 1
    xp = g.pad(x, [0, 0, pd, ph, pw], [0, 0, pd, ph, pw], hint=node.name + "_pad")
    y = None
    for k in range(kd):
        planes = _depth_planes(g, xp, k, do, sd, ed, node.name)
        y = _add(g, y, g.conv2d(planes, _tap(g, w, k, node.name), (sh, sw), (eh, ew), groups,
                                hint=node.name + f"_conv{k}"), node.name + f"_sum{k}")
    return _add_bias(g, _from_planes(g, y, n, node.name), bias, node.name)


def _conv3d_backward(g, node, grad, x, w, stride, padding, dilation, groups, output_mask):
    """The gradients of _conv3d, tap by tap: the weight gradient of tap kd
    is the 2-d weight gradient of its planes, the input gradient the sum of
    each tap's 2-d input gradient put back at the depths the tap read."""
    (sd, sh, sw), (pd, ph, pw), (ed, eh, ew) = stride, padding, dilation
    n, c, d, h, wd = x.shape
    f, cg, kd, kh, kw = w.shape
    do = grad.shape[2]
    g2 = g.reshape(g.transpose(grad, [0, 2, 1, 3, 4], hint=node.name + "_grad_t"),
                   (n * do,) + tuple(grad.shape[1:2]) + tuple(grad.shape[3:]),
                   hint=node.name + "_grad_planes")
    gi = gw = gb = None
    if output_mask[1]:
        xp = g.pad(x, [0, 0, pd, ph, pw], [0, 0, pd, ph, pw], hint=node.name + "_pad")
        gw = g.fill((f, cg, kd, kh, kw), 0.0, hint=node.name + "_weight_init")
        for k in range(kd):
            planes = _depth_planes(g, xp, k, do, sd, ed, node.name)
            tap = _weight_gradient(g, g2, planes, (f, cg, kh, kw), (sh, sw), (eh, ew), groups,
                                   node.name + f"_weight{k}")
            gw = g.insert_slice(g.reshape(tap, (f, cg, 1, kh, kw), hint=node.name + f"_w{k}"),
                                gw, [0, 0, k, 0, 0], hint=node.name + f"_weight_tap{k}")
    if output_mask[0]:
        dp = d + 2 * pd
        for k in range(kd):
            planes = _input_gradient(g, g2, _tap(g, w, k, node.name), (n * do, c, h, wd),
                                     (sh, sw), (ph, pw), (eh, ew), groups,
                                     node.name + f"_input{k}")
            depths = _from_planes(g, planes, n, node.name + f"_input{k}")
            placed = g.insert_slice(depths, g.fill((n, c, dp, h, wd), 0.0,
                                                   hint=node.name + f"_input{k}_init"),
                                    [0, 0, k * ed, 0, 0], [1, 1, sd, 1, 1],
                                    hint=node.name + f"_input{k}_placed")
            gi = _add(g, gi, placed, node.name + f"_input_sum{k}")
        if pd:
            gi = g.extract_slice(gi, [0, 0, pd, 0, 0], [n, c, d, h, wd], hint=node.name + "_unpad")
    if output_mask[2]:
        gb = g.reduce(grad, [0, 2, 3, 4], hint=node.name + "_bias")
    return gi, gw, gb


def _as_2d(g, x):
    """N x C x L as N x C x 1 x L."""
    return g.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))


def _add_bias(g, y, bias, hint):
    if bias is None:
        return y
    return g.ew([y, g.reshape(bias, (bias.shape[0],) + (1,) * (y.rank - 2))],
                lambda b, u, c: b.add(u, c), hint=hint)


@lowering("aten.convolution.default")
def convolution(g, node, x, w, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    """linalg.conv_2d_nchw_fchw of the padded input (any stride and
    dilation); grouped: a generic whose channel index is (f floordiv F/G) *
    C/G + c. Transposed: the input gradient of the convolution it
    transposes (weight Cin x Cout/G x k). 1-d: 2-d over a height of 1."""
    if w.rank == 3:
        y = convolution(g, node, _as_2d(g, x), _as_2d(g, w), bias, [1] + list(stride),
                        [0] + list(padding), [1] + list(dilation), transposed,
                        [0] + list(output_padding), groups)
        return g.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    stride, padding, dilation = _conv_args(node, stride, padding, dilation, transposed,
                                           output_padding, groups, w)
    if w.rank == 5:
        return _conv3d(g, node, x, w, bias, stride, padding, dilation, groups)
    if transposed:
        n, _, h, wd = x.shape
        shape = (n, w.shape[1] * groups) + tuple(
            (i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
                (h, wd), stride, padding, dilation, w.shape[2:], output_padding))
        y = _input_gradient(g, x, w, shape, stride, padding, dilation, groups, node.name)
        return _add_bias(g, y, bias, node.name)
    xp = g.pad(x, [0, 0] + padding, [0, 0] + padding, hint=node.name + "_pad")
    y = g.conv2d(xp, w, stride, dilation, groups, hint=node.name)
    return _add_bias(g, y, bias, node.name)


@lowering("aten.convolution_backward.default")
def convolution_backward(g, node, grad, x, w, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    """Regular: the input gradient (_input_gradient), the weight gradient
    (the correlation of the padded input with the gradient), the bias
    gradient (the gradient summed). Transposed: the roles swap (the input
    gradient is the correlation of the padded gradient with the weight).
    1-d: 2-d over a height of 1."""
    if w.rank == 3:
        gi, gw, gb = convolution_backward(
            g, node, _as_2d(g, grad), _as_2d(g, x), _as_2d(g, w), bias_sizes,
            [1] + list(stride), [0] + list(padding), [1] + list(dilation), transposed,
            [0] + list(output_padding), groups, output_mask)
        return (g.reshape(gi, x.shape) if gi is not None else None,
                g.reshape(gw, w.shape) if gw is not None else None, gb)
    stride, padding, dilation = _conv_args(node, stride, padding, dilation, transposed,
                                           output_padding, groups, w)
    if w.rank == 5:
        return _conv3d_backward(g, node, grad, x, w, stride, padding, dilation, groups,
                                output_mask)
    (p0, p1) = padding
    gi = gw = gb = None
    if transposed:
        gp = g.pad(grad, [0, 0, p0, p1], [0, 0, p0, p1], hint=node.name + "_pad")
        if output_mask[0]:
            gi = _correlate(g, gp, w, x.shape, stride, dilation, groups, node.name + "_input")
        if output_mask[1]:
            gw = _weight_gradient(g, x, gp, w.shape, stride, dilation, groups,
                                  node.name + "_weight")
    else:
        # The weight gradient first: the input (decoded, when act stores it
        # encoded) and its padded copy die before the input gradient is
        # allocated, so the three are never live together.
        if output_mask[1]:
            xp = g.pad(x, [0, 0, p0, p1], [0, 0, p0, p1], hint=node.name + "_pad")
            gw = _weight_gradient(g, grad, xp, w.shape, stride, dilation, groups,
                                  node.name + "_weight")
        if output_mask[0]:
            gi = _input_gradient(g, grad, w, x.shape, stride, padding, dilation, groups,
                                 node.name + "_input")
    if output_mask[2]:
        gb = g.reduce(grad, [0, 2, 3], hint=node.name + "_bias")
    return gi, gw, gb

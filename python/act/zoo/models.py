"""The zoo's models: every classification family of Debian's torchvision at
reduced width and resolution, and the PyTorch blocks users build models
from, by name (ZOO: name -> make(batch) giving (module, inputs, targets[,
loss_fn])), with the batch each runs at (BATCH) and the error bound of
the zoo's table (BOUND)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BOUND = 1e-4


def _images(batch, size=32, classes=10, channels=3):
    return torch.randn(batch, channels, size, size), torch.randint(0, classes, (batch,))


def _tv(builder, size=32, **kwargs):
    def make(batch):
        import torchvision.models as tvm
        return (getattr(tvm, builder)(num_classes=10, **kwargs),) + _images(batch, size)
    make.__doc__ = f"torchvision {builder}({', '.join(f'{k}={v}' for k, v in kwargs.items())}), " \
                   f"{size}x{size}"
    return make


def _family(build, size=64):
    """A torchvision family at reduced depth and width (the same modules and
    ops as the full models, a step small enough for act's loops)."""
    def make(batch):
        return (build(),) + _images(batch, size)
    make.__doc__ = build.__doc__
    return make


def _resnext():
    """ResNeXt: bottlenecks with grouped 3x3 convolutions (groups 8)."""
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], groups=8, width_per_group=4, num_classes=10)


def _wide_resnet():
    """Wide ResNet: bottlenecks twice as wide."""
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128, num_classes=10)


def _vgg_bn():
    """VGG with BatchNorm: 3x3 conv-BN-ReLU stages, max pooling, the
    7x7 adaptive pool and the three-layer classifier (reduced)."""
    from torchvision.models.vgg import VGG, make_layers
    m = VGG(make_layers([16, "M", 32, "M", 64, 64, "M"], batch_norm=True), num_classes=10)
    m.classifier = nn.Sequential(nn.Linear(64 * 7 * 7, 64), nn.ReLU(True), nn.Dropout(),
                                 nn.Linear(64, 64), nn.ReLU(True), nn.Dropout(), nn.Linear(64, 10))
    return m


def _densenet():
    """DenseNet: dense blocks (concatenation), transitions with average
    pooling."""
    from torchvision.models.densenet import DenseNet
    return DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16,
                    num_classes=10)


def _convnext():
    """ConvNeXt: 7x7 depthwise convolutions, LayerNorm over channels-last,
    layer scale."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)


def _regnet():
    """RegNetX: grouped bottlenecks from RegNet's width rule."""
    from torchvision.models.regnet import BlockParams, RegNet
    return RegNet(BlockParams.from_init_params(depth=4, w_0=16, w_a=8.0, w_m=2.0, group_width=8),
                  num_classes=10, stem_width=16)


def _vit(batch):
    from torchvision.models import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                          hidden_dim=32, mlp_dim=64, num_classes=10)
    # torchvision zero-initializes the head: every other gradient would be 0.
    nn.init.normal_(m.heads.head.weight, std=0.02)
    return (m,) + _images(batch)


def _swin(batch):
    from torchvision.models.swin_transformer import SwinTransformer
    m = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                        window_size=[4, 4], num_classes=10)
    return (m,) + _images(batch)


def _maxvit(batch):
    from torchvision.models.maxvit import MaxVit
    m = MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2, block_channels=[16, 32],
               block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10)
    return (m,) + _images(batch)


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


class Blocks(nn.Module):
    """Hand-written blocks: RMSNorm (pow, rsqrt), tanh-GELU, SiLU,
    Hardswish, ReLU6, Mish, a depthwise-separable convolution."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.stem = nn.Conv2d(3, 8, 3, padding=1, stride=2)
        self.norm = RMSNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.hardswish(self.stem(x))
        x = F.relu6(self.pw(F.silu(self.dw(x))))
        x = F.adaptive_avg_pool2d(F.mish(x), 1).flatten(1)
        return self.fc2(F.gelu(self.fc1(self.norm(x)), approximate="tanh"))


class GRUUnrolled(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], 16)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.fc(h)


class Recurrent(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(8, 16, batch_first=True)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class TinyGPT(nn.Module):
    """Embedding, positional table, causal-mask buffer, RMSNorm, attention
    written out, tanh-GELU MLP; next-token logits."""

    def __init__(self, vocab=32, d=16, T=8, heads=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(T, d))
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2, self.head = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Linear(d, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
        self.heads = heads

    def forward(self, idx):
        B, T = idx.shape
        x = self.emb(idx) + self.pos[:T]
        q, k, v = self.qkv(self.n1(x)).split(x.shape[-1], dim=2)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, -1)
        x = x + self.proj(y)
        x = x + self.fc2(F.gelu(self.fc1(self.n2(x)), approximate="tanh"))
        return self.head(x).view(B * T, -1)


class Attention(nn.Module):
    """nn.MultiheadAttention with a causal attn_mask and a key padding mask."""

    def __init__(self):
        super().__init__()
        self.att = nn.MultiheadAttention(16, 2, batch_first=True)
        self.fc = nn.Linear(16, 10)
        self.register_buffer("causal", torch.triu(torch.ones(6, 6, dtype=torch.bool), 1))

    def forward(self, x):
        pad = torch.zeros(x.shape[0], 6, dtype=torch.bool)
        pad[:, -1] = True
        y, _ = self.att(x, x, x, attn_mask=self.causal, key_padding_mask=pad,
                        need_weights=False)
        return self.fc(y[:, 0])


class EmbeddingBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.fc = nn.Linear(16, 10)

    def forward(self, idx):
        return self.fc(self.emb(idx).mean(1))


def _seq(module_fn, shape=(6, 8)):
    def make(batch):
        return module_fn(), torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
    return make


def _encoder(batch):
    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, norm_first=True)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            return self.fc(self.layer(x).mean(1))
    return Enc(), torch.randn(batch, 6, 16), torch.randint(0, 10, (batch,))


# Ordinary models of the kinds users write (norms, upsampling, einsum,
# regression and multi-label losses, 1-d convolution, in-place ops).


def _img(b, c=3, s=8, k=5): return torch.randn(b, c, s, s), torch.randint(0, k, (b,))

class NormsPReLU(nn.Module):
    """GroupNorm, InstanceNorm, ELU, BatchNorm1d, PReLU."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv2d(3, 8, 3); s.gn = nn.GroupNorm(2, 8); s.inn = nn.InstanceNorm2d(8, affine=True)
        s.fc = nn.Linear(8, 16); s.bn = nn.BatchNorm1d(16); s.pr = nn.PReLU(); s.out = nn.Linear(16, 5)
    def forward(s, x):
        x = F.elu(s.inn(s.gn(s.c(x))))
        x = x.mean((2, 3))
        return s.out(s.pr(s.bn(s.fc(x))))
def _norms(b): return (NormsPReLU(),) + _img(b)

class UpsampleCat(nn.Module):
    """LayerNorm over channels-last, nearest upsampling, cat, chunk, F.normalize."""
    def __init__(s):
        super().__init__()
        s.c1 = nn.Conv2d(3, 8, 3, padding=1); s.ln = nn.LayerNorm(8); s.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1); s.fc = nn.Linear(8 * 8 * 8, 5)
    def forward(s, x):
        y = s.c1(x)
        y = s.ln(y.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        z = F.interpolate(s.c2(y), scale_factor=2, mode="nearest")
        u, v = torch.cat([y, z], 1).chunk(2, dim=1)
        w = F.normalize(u * torch.sigmoid(v), dim=1)
        return s.fc(w.flatten(1))
def _upsample(b): return (UpsampleCat(),) + _img(b)

class EinsumMax(nn.Module):
    """einsum attention, max over a dim, logsigmoid."""
    def __init__(s):
        super().__init__()
        s.q = nn.Linear(8, 8); s.k = nn.Linear(8, 8); s.fc = nn.Linear(8, 5)
    def forward(s, x):
        q, k = s.q(x), s.k(x)
        att = torch.einsum("bid,bjd->bij", q, k).softmax(-1)
        y = att @ x
        y = y.max(dim=1).values + F.logsigmoid(y).mean(1)
        return s.fc(y)
def _einsum(b): return EinsumMax(), torch.randn(b, 6, 8), torch.randint(0, 5, (b,))

class Regression(nn.Module):
    """Average pooling, bilinear upsampling, adaptive max pooling; MSE loss."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv2d(3, 4, 3, padding=1); s.fc = nn.Linear(4 * 4, 2)
    def forward(s, x):
        x = F.avg_pool2d(F.relu(s.c(x)), 2)
        x = F.interpolate(x, size=(6, 6), mode="bilinear", align_corners=False)
        x = F.adaptive_max_pool2d(x, 2)
        return s.fc(x.flatten(1))
def _regression(b): return Regression(), torch.randn(b, 3, 8, 8), torch.randn(b, 2), F.mse_loss

class Standardize(nn.Module):
    """std, where, clamp; cross-entropy with label smoothing."""
    def __init__(s):
        super().__init__()
        s.l1 = nn.Linear(10, 20); s.l2 = nn.Linear(20, 5)
    def forward(s, x):
        h = s.l1(x)
        h = (h - h.mean(1, keepdim=True)) / (h.std(1, keepdim=True) + 1e-5)
        h = torch.where(h > 0, h, 0.1 * h).clamp(-3, 3)
        return s.l2(h)
def _smoothing(b): return Standardize(), torch.randn(b, 10), torch.randint(0, 5, (b,)), lambda o, t: F.cross_entropy(o, t, label_smoothing=0.1)
def _smoothing_weighted(b):
    """nn.CrossEntropyLoss with class weights, label smoothing and an
    ignored target (its row counts neither in the loss nor the mean)."""
    targets = torch.randint(0, 5, (max(b, 3),))
    targets[1] = -100
    loss = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5, 1.5, 1.0]),
                               label_smoothing=0.2, ignore_index=-100)
    return Standardize(), torch.randn(max(b, 3), 10), targets, loss

class Conv1d(nn.Module):
    """Conv1d, GELU."""
    def __init__(s):
        super().__init__()
        s.c = nn.Conv1d(4, 8, 3, padding=1); s.fc = nn.Linear(8 * 10, 5)
    def forward(s, x):
        return s.fc(F.gelu(s.c(x)).flatten(1))
def _conv1d(b): return Conv1d(), torch.randn(b, 4, 10), torch.randint(0, 5, (b,))

class MultiLabel(nn.Module):
    """Multi-label logits; BCE-with-logits loss."""
    def __init__(s):
        super().__init__()
        s.l = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 4))
    def forward(s, x): return s.l(x)
def _multilabel(b): return MultiLabel(), torch.randn(b, 6), torch.randint(0, 2, (b, 4)).float(), F.binary_cross_entropy_with_logits

class InPlace(nn.Module):
    """In-place ops: add_, ReLU(inplace=True), x[:, 0] = 0."""
    def __init__(s):
        super().__init__()
        s.l1 = nn.Linear(6, 12); s.l2 = nn.Linear(12, 4); s.r = nn.ReLU(inplace=True)
    def forward(s, x):
        h = s.l1(x).clone()
        h.add_(1.0)
        h = s.r(h)
        h = h.clone(); h[:, 0] = 0.0
        return s.l2(h)
def _inplace(b): return InPlace(), torch.randn(b, 6), torch.randint(0, 4, (b,))


class EncoderDecoder(nn.Module):
    """Strided convolutions down, transposed ones up (grouped, with output
    padding), a ConvTranspose1d head: U-Net/GAN-style."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.grouped = nn.ConvTranspose2d(4, 4, 4, stride=2, padding=1, groups=2)
        self.up1d = nn.ConvTranspose1d(4, 2, 3, stride=2)
        self.fc = nn.Linear(2 * 33, 5)

    def forward(self, x):
        y = self.grouped(torch.relu(self.up(torch.relu(self.down(x)))))
        return self.fc(self.up1d(y.mean(2)).flatten(1))



# -- ops ordinary models use beyond the families above: one model per group,
# each op reached through PyTorch's public API as a user calls it ----------

class _Head(nn.Module):
    """Linear -> fn -> Linear over (batch, 8) features."""

    def __init__(self, fn, d=8, k=3):
        super().__init__()
        self.l, self.o, self.fn = nn.Linear(d, d), nn.Linear(d, k), fn

    def forward(self, x):
        return self.o(self.fn(self.l(x)))


def _features(fn, loss=None):
    def make(batch):
        r = (_Head(fn), torch.randn(batch, 8), torch.randint(0, 3, (batch,)))
        return r + (loss,) if loss else r
    return make


def _elementwise(y):
    """Each op on the same features (terms summed, none fed to the next)."""
    terms = [torch.lerp(y, y * 2, 0.3), torch.lerp(y, -y, torch.sigmoid(y)),
             torch.addcdiv(y, y, 2 + y.abs()), F.hardshrink(y), F.softshrink(y),
             F.threshold(y, 0.1, 2.0), F.celu(y), F.glu(torch.cat([y, y], -1)),
             torch.clamp(y, torch.zeros_like(y) - 0.5, torch.ones_like(y)),
             torch.logit(torch.sigmoid(y) * 0.9 + 0.05), torch.sinh(y * 0.5), torch.cosh(y * 0.1),
             torch.asinh(y), torch.atan(y), torch.frac(y) * 0.1, torch.exp2(y * 0.1),
             torch.log2(y.abs() + 1), torch.log10(y.abs() + 1), torch.special.erfc(y),
             torch.nan_to_num(torch.where(torch.isnan(y) | torch.isinf(y), torch.zeros_like(y), y)),
             torch.logaddexp(y, -y), torch.hypot(y, y + 1), torch.div(y, 0.7, rounding_mode="floor")]
    return sum(terms) / len(terms)


def _scans(y):
    """Sorting, scans, flips, diagonals, products: each on the same
    features."""
    values, _ = torch.sort(y, -1)
    top = torch.cat([y.topk(3, -1).values, y[:, 3:]], -1)
    terms = [values, top, torch.cumsum(y, -1) * 0.1, torch.cumprod(torch.sigmoid(y), -1),
             torch.flip(y, [-1]), y.median(-1, keepdim=True).values,
             (y.diagonal().sum() + torch.diag(y[:, 0]).sum(0)[:1]).expand_as(y),
             torch.gather(y, -1, y.argsort(-1)), y.prod(-1, keepdim=True) * 0.01,
             torch.var_mean(y, -1, keepdim=True)[0]]
    return sum(terms) / len(terms)


class _Maps(nn.Module):
    """Pixel (un)shuffle, reflection/replication/circular padding, average
    pooling without the padding in its count, channel dropout."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 16, 3, padding=1)
        self.r = nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect")
        self.fc = nn.Linear(16 * 4, 5)

    def forward(self, x):
        y = F.pixel_shuffle(F.relu(self.c(x)), 2)                     # 4 x 16 x 16
        y = self.r(y) + F.pad(y, (1, 1, 1, 1), mode="replicate")[:, :, 1:-1, 1:-1]
        y = F.pad(y, (1, 1, 1, 1), mode="circular")[:, :, :16, :16]
        y = F.dropout2d(F.pixel_unshuffle(y, 2), 0.25, training=True)  # 16 x 8 x 8
        return self.fc(F.avg_pool2d(y, 3, stride=2, padding=1, count_include_pad=False)
                       [:, :, ::2, ::2].flatten(1))


class _Bags(nn.Module):
    """nn.EmbeddingBag (mean, and sum with a padding index), nn.Bilinear,
    F.one_hot with num_classes, cdist, alpha dropout."""

    def __init__(self):
        super().__init__()
        self.mean = nn.EmbeddingBag(20, 6, mode="mean")
        self.sum = nn.EmbeddingBag(20, 6, mode="sum", padding_idx=0)
        self.bil = nn.Bilinear(6, 6, 6)
        self.centers = nn.Parameter(torch.randn(4, 6))
        self.o = nn.Linear(6 + 4 + 20, 3)

    def forward(self, idx):
        a, b = self.mean(idx), self.sum(idx)
        y = F.alpha_dropout(F.selu(self.bil(a, b)), 0.2, training=True)
        hot = F.one_hot(idx, 20).float().mean(1)
        return self.o(torch.cat([y, -torch.cdist(y, self.centers), hot], -1))


class _Random(nn.Module):
    """torch.randn/rand/randn_like/normal/bernoulli in the forward (a VAE's
    reparametrization, noise injection) and RReLU's random slopes: all
    from the step's seed."""

    def __init__(self):
        super().__init__()
        self.e, self.d, self.o = nn.Linear(8, 8), nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        mu, logvar = self.e(x).chunk(2, -1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        y = self.d(z) + 0.1 * torch.randn(x.shape) + 0.1 * torch.rand(x.shape)
        y = y + 0.1 * torch.normal(torch.zeros_like(y), 1.0) * torch.bernoulli(torch.sigmoid(y))
        return self.o(F.rrelu(y, training=True))


class _Frozen(nn.Module):
    """A frozen (eval-mode) BatchNorm with running statistics in a training
    step, weight-normalized layers (dims 0, 1 and the whole tensor), 1-d
    linear interpolation."""

    def __init__(self):
        super().__init__()
        self.c = nn.utils.weight_norm(nn.Conv1d(2, 4, 3, padding=1))
        self.bn = nn.BatchNorm1d(4)
        self.l = nn.utils.weight_norm(nn.Linear(4 * 12, 6), dim=1)
        self.m = nn.utils.weight_norm(nn.Linear(6, 3), dim=None)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        self.bn.eval()
        y = F.interpolate(F.relu(self.bn(self.c(x))), size=12, mode="linear", align_corners=True)
        return self.m(self.l(F.interpolate(y, scale_factor=1.0, mode="linear").flatten(1)))


def _indexing(y):
    """index_fill, index_copy, Python-style remainder (ints and floats),
    fmod, floor."""
    terms = [y.index_fill(1, torch.tensor([0, 2]), 0.0), y.index_copy(1, torch.tensor([1, 3]), y[:, :2]),
             (y * 3).long().remainder(2).float(), torch.remainder(y, 0.7), torch.remainder(y, -0.6),
             torch.fmod(y, 0.7), (y * 5).long().remainder(-3).float(), (y * 4).floor() / 4]
    return sum(terms) / len(terms)


def _segmentation(batch):
    """Per-pixel cross-entropy ([N, C, H, W] against [N, H, W]: nll_loss2d)
    with class weights and an ignored class, plus label smoothing."""
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1))

    def loss(o, t):
        w = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=o.dtype)
        return (F.cross_entropy(o, t, weight=w, ignore_index=2)
                + F.cross_entropy(o, t, reduction="none").mean()
                + F.cross_entropy(o, t, label_smoothing=0.1))
    return model, torch.randn(batch, 3, 8, 8), torch.randint(0, 4, (batch, 8, 8)), loss


def _likelihoods(o, t):
    """F.gaussian_nll_loss and torch.distributions (their value checks
    are skipped while tracing)."""
    return (F.gaussian_nll_loss(o, t, torch.sigmoid(o) + 0.1, full=True)
            + F.poisson_nll_loss(o, t.abs())
            - torch.distributions.Normal(o, torch.ones_like(o)).log_prob(t).mean()
            + torch.distributions.Categorical(logits=o).entropy().mean())


class _SpatialTransformer(nn.Module):
    """PyTorch's spatial-transformer tutorial in small: a localization net
    initialized to the identity transform, F.affine_grid, F.grid_sample
    (bilinear, zero padding; with align_corners False and True)."""

    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(3 * 8 * 8, 6)
        nn.init.zeros_(self.loc.weight)
        with torch.no_grad():
            self.loc.bias.copy_(torch.tensor([1.0, 0, 0, 0, 1.0, 0]))
        self.c, self.o = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(8, 3)

    def forward(self, x):
        theta = self.loc(x.flatten(1)).view(-1, 2, 3)
        a = F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=False),
                          align_corners=False)
        b = F.grid_sample(x, F.affine_grid(theta * 1.3, (x.shape[0], 3, 6, 5), align_corners=True),
                          align_corners=True)
        return self.o(torch.cat([self.c(a).mean((2, 3)), self.c(b).mean((2, 3))], 1))


class _Pooling(nn.Module):
    """Adaptive max pooling between sizes that do not divide (PyTorch's
    floor/ceil windows) and dilated max pooling (with ceil_mode)."""

    def __init__(self):
        super().__init__()
        self.c, self.o = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4 * (15 + 9 + 9), 3)

    def forward(self, x):
        y = torch.relu(self.c(x))
        a = F.adaptive_max_pool2d(y, (3, 5))
        b = F.max_pool2d(y, 2, 1, 0, dilation=2)[:, :, :3, :3]
        d = F.max_pool2d(y, 3, 2, 1, dilation=2, ceil_mode=True)[:, :, :3, :3]
        return self.o(torch.cat([a.flatten(1), b.flatten(1), d.flatten(1)], 1))


class _SetItem(nn.Module):
    """Assignment and += through index tensors after a ':' (index_put with
    leading slices, a negative index)."""

    def __init__(self):
        super().__init__()
        self.l, self.o = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        y = self.l(x).view(-1, 2, 4).clone()
        y[:, :, torch.tensor([0, 2])] = y[:, :, torch.tensor([1, -1])] * 2
        z = torch.zeros_like(y)
        z[:, torch.tensor([1])] += y[:, torch.tensor([0])]
        return self.o((y + z).flatten(1))


class _SetItemView(nn.Module):
    """Assignment through index tensors into a reshaped copy (functionalized
    as as_strided_scatter into a view of it)."""

    def __init__(self):
        super().__init__()
        self.l, self.o = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        y = self.l(x).view(-1, 2, 4).clone()
        y[:, :, torch.tensor([0, -2])] = y[:, :, torch.tensor([1, 3])] * 2
        return self.o(y.flatten(1))


class _Fold(nn.Module):
    """F.unfold and F.fold (col2im: index_put with index tensors after
    ':')."""

    def __init__(self):
        super().__init__()
        self.c, self.o = nn.Conv2d(3, 2, 3, padding=1), nn.Linear(128, 3)

    def forward(self, x):
        return self.o(F.fold(F.unfold(self.c(x), 2, stride=2) * 0.5, (8, 8), 2, stride=2).flatten(1))


class _LocalResponse(nn.Module):
    """nn.LocalResponseNorm (AlexNet-style) trained with a multi-class
    margin loss."""

    def __init__(self):
        super().__init__()
        self.c, self.n, self.o = nn.Conv2d(3, 6, 3, padding=1), nn.LocalResponseNorm(3, k=2.0), nn.Linear(6, 4)

    def forward(self, x):
        return self.o(self.n(torch.relu(self.c(x))).mean((2, 3)))


def _margin(o, t):
    w = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=o.dtype)
    return F.multi_margin_loss(o, t) + F.multi_margin_loss(o, t, p=2, margin=0.5, weight=w)


class _Bicubic(nn.Module):
    """Bicubic upsampling (F.interpolate by a factor, nn.Upsample with
    align_corners) in a super-resolution-style head, global max pooling."""

    def __init__(self):
        super().__init__()
        self.c, self.up = nn.Conv2d(3, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="bicubic",
                                                                     align_corners=True)
        self.o = nn.Linear(4 * 2, 3)

    def forward(self, x):
        y = torch.relu(self.c(x))
        a = F.interpolate(y, scale_factor=1.5, mode="bicubic", align_corners=False)
        # (amax: its gradient mask compares the saved features with their
        # maximum, which keeps them exact under encodings: compared-exactly.)
        return self.o(torch.cat([a.mean((2, 3)), self.up(y).amax((2, 3))], 1))


def _loss_model(loss):
    return lambda batch: (_Head(lambda y: y, 8, 4), torch.randn(batch, 8), torch.randn(batch, 4), loss)



ZOO = {
    # torchvision families (0.14), reduced width or resolution
    "resnet18": _tv("resnet18"),
    "resnext": _family(_resnext),
    "wide_resnet": _family(_wide_resnet),
    "vgg_bn": _family(_vgg_bn),
    "squeezenet1_1": _tv("squeezenet1_1", size=64),
    "densenet": _family(_densenet),
    "mobilenet_v2": _tv("mobilenet_v2", size=64, width_mult=0.25),
    "mobilenet_v3_small": _tv("mobilenet_v3_small", size=64, width_mult=0.25),
    "mnasnet0_5": _tv("mnasnet0_5", size=64),
    "shufflenet_v2_x0_5": _tv("shufflenet_v2_x0_5", size=64),
    # (Full width: torchvision 0.14 ignored the width_mult=0.25 this entry
    # once passed; 0.21 refuses it.)
    "efficientnet_b0": _tv("efficientnet_b0", size=64),
    "regnet_x": _family(_regnet),
    "convnext": _family(_convnext),
    "googlenet": _tv("googlenet", size=64, aux_logits=False, init_weights=True),
    "inception_v3": _tv("inception_v3", size=75, aux_logits=False, init_weights=True),
    "alexnet": _tv("alexnet", size=64),
    "vit": _vit,
    "swin": _swin,
    "maxvit": _maxvit,
    # torch.nn blocks
    "transformer_encoder_layer": _encoder,
    "multihead_attention": _seq(Attention, (6, 16)),
    "lstm": _seq(lambda: Recurrent("LSTM"), (5, 8)),
    "gru": _seq(lambda: Recurrent("GRU"), (5, 8)),
    "gru_cell": _seq(GRUUnrolled, (5, 8)),
    "embedding": lambda batch: (EmbeddingBag(), torch.randint(0, 50, (batch, 7)),
                                torch.randint(0, 10, (batch,))),
    # hand-written
    "blocks": lambda batch: (Blocks(),) + _images(batch, 16),
    "tiny_gpt": lambda batch: (TinyGPT(), torch.randint(0, 32, (batch, 8)),
                               torch.randint(0, 32, (batch * 8,))),
    "norms_prelu": _norms,
    "upsample_cat": _upsample,
    "einsum_max": _einsum,
    "regression_mse": _regression,
    "label_smoothing": _smoothing,
    "label_smoothing_weighted": _smoothing_weighted,
    "conv1d": _conv1d,
    "multilabel_bce": _multilabel,
    "inplace": _inplace,
    "encoder_decoder": lambda batch: (EncoderDecoder(),) + _images(batch, 8, 5),
    # op groups (act.decomp and the newer lowerings)
    "ops_elementwise": _features(_elementwise),
    "ops_sort_scan": _features(_scans),
    "ops_maps": lambda batch: (_Maps(),) + _images(batch, 8, 5),
    "ops_bags": lambda batch: (_Bags(), torch.randint(0, 20, (batch, 5)), torch.randint(0, 3, (batch,))),
    "ops_smooth_l1": _loss_model(F.smooth_l1_loss),
    "ops_huber_l1": _loss_model(lambda o, t: F.huber_loss(o, t, delta=0.5) + F.l1_loss(o, t)),
    "ops_kl_div": _loss_model(lambda o, t: F.kl_div(F.log_softmax(o, -1), F.softmax(t, -1),
                                                    reduction="batchmean")),
    "ops_random": lambda batch: (_Random(), torch.randn(batch, 8), torch.randint(0, 3, (batch,))),
    "ops_frozen_bn_weight_norm": lambda batch: (_Frozen(), torch.randn(batch, 2, 8),
                                                torch.randint(0, 3, (batch,))),
    "ops_indexing": _features(_indexing),
    "ops_segmentation": _segmentation,
    "ops_likelihoods": _loss_model(_likelihoods),
    "ops_setitem": lambda batch: (_SetItem(), torch.randn(batch, 8),
                                  torch.randint(0, 3, (batch,))),
    "ops_setitem_view": lambda batch: (_SetItemView(), torch.randn(batch, 8),
                                       torch.randint(0, 3, (batch,))),
    "ops_lrn_margin": lambda batch: (_LocalResponse(),) + _images(batch, 8, 4) + (_margin,),
    "ops_bicubic": lambda batch: (_Bicubic(),) + _images(batch, 8, 3),
    "ops_fold": lambda batch: (_Fold(),) + _images(batch, 8, 3),
    "ops_pooling": lambda batch: (_Pooling(),) + _images(batch, 8, 3),
    "ops_spatial_transformer": lambda batch: (_SpatialTransformer(), torch.randn(batch, 3, 8, 8),
                                              torch.randint(0, 3, (batch,))),
}

# Batch per model: BatchNorm over N x 1 x 1 values (the last stage of a
# 32x32 ResNet) is ill-conditioned at batch 2 (float32 autograd itself is
# far from float64 there), so those run at 8 or at 64x64; the reduced
# families run at 64x64, batch 2.
BATCH = {"resnet18": 8, "mobilenet_v2": 4, "mnasnet0_5": 4, "efficientnet_b0": 4,
         "mobilenet_v3_small": 4, "shufflenet_v2_x0_5": 4,
         # 75x75 ends in 1x1 maps: at batch 2 its last BatchNorms normalize
         # two values, where float32 autograd itself is 2.8 off float64.
         "inception_v3": 8}

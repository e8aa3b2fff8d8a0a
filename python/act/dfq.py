"""FracTrain's dynamic fractional quantization (DFQ, papers/fractrain.txt
Sec. 3.2) in the exported training graph.

Every convolution and linear layer of a model gets a gate: a small network
that reads the layer's input and picks, per batch (per training iteration:
"the highest-probability precision option is selected to train at each
iteration"), one precision option (FW, BW) from a list: the layer's input and
weight are fake-quantized at FW bits in the forward, the gradient arriving at
its output at BW bits in the backward. The gates train with the model under
FracTrain's cost penalty (Eq. 2): loss + beta * cp, cp = the step's
computational cost over fp32's (Sec. 4.1: MACs x b_a/32 x b_b/32 per dot
product; forward a = input at FW, b = weight at FW; the two backward
convolutions grad_out at BW times weight / input at FW), and the training
loop flips beta's sign to hold cp at the target (`DFQ.control`).

Where it lives, and why: the gates, the quantizers and the penalty are
PyTorch modules (this file), so act.export traces them into the step like
any layer: the gate's choice is a value computed inside the compiled step
from the batch (the precision changes per batch with no recompilation), its
parameters are ordinary parameters for any optimizer, and its straight-
through gradient is autograd's. An act gate op would have to duplicate all of
that in MLIR. Each layer records the bits it executed in a buffer
(`executed`), which act.compile copies back after every call like BatchNorm's
running statistics, so the cost counted is the cost that ran
(`DFQ.executed_cost`).

Gate: FracTrain follows SkipNet's per-layer RNN gates; here each gate is a
linear layer on the layer input's mean over the batch and spatial positions
(SkipNet's feed-forward gate without its convolutions), one decision per
batch. Options exclude FracTrain's FW-0/BW-0 (skip the block): skipping
needs a residual block around the layer, which plain layers do not have.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .export import record

# The paper's MobileNetV2 options (App. F) without FW-0/BW-0. (Its
# ResNet-38/74 options start at FW-2: with act's per-tensor nearest
# quantizer, FW-2 and FW-3 collapse the digits models on some seeds.)
RESNET_OPTIONS = ((2, 6), (3, 6), (4, 6), (4, 12), (6, 8), (6, 12))
DEFAULT_OPTIONS = ((4, 8), (6, 8), (6, 10), (8, 8))


def _levels(bits):
    """2^bits - 1 for a 0-d float tensor of integer value (exactly)."""
    return torch.round(torch.exp(bits * math.log(2.0))) - 1.0


def quantize(x, bits, stochastic=False):
    """`x` at `bits` bits: one range per tensor (min..max), nearest
    rounding, or stochastic: floor(y + u), u uniform in [0, 1) from
    torch.rand_like (unbiased: E[q] = y), which act's step draws from the
    step's seed by Philox (act.aten.rand_like) and act.export's reference
    reproduces. `bits` is a 0-d float tensor (chosen at run time)."""
    lo, hi = x.min(), x.max()
    levels = _levels(bits)
    scale = torch.clamp(hi - lo, min=1e-12) / levels
    y = (x - lo) / scale
    if stochastic:
        q = torch.clamp(torch.floor(y + torch.rand_like(y)), min=0.0) * 1.0
        q = torch.minimum(q, levels)
    else:
        q = torch.round(y)
    return q * scale + lo


def fake_quantize(x, bits):
    """quantize(x, bits) in the forward, the identity's gradient
    (straight-through)."""
    q = quantize(x.detach(), bits)
    return x + (q - x).detach()


class _QuantizeGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits, stochastic):
        ctx.save_for_backward(bits)
        ctx.stochastic = stochastic
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        (bits,) = ctx.saved_tensors
        return quantize(grad, bits, ctx.stochastic), None, None


def quantize_gradient(x, bits, stochastic=True):
    """The identity in the forward; the gradient quantized at `bits` bits
    in the backward, by stochastic rounding (SBM's gradient quantizer, on
    which FracTrain builds; act-quantize-compute{stochastic-gradients}) or
    to the nearest."""
    return _QuantizeGradient.apply(x, bits, stochastic)


class Gate(nn.Module):
    """Picks one of `n` options per batch from the input's mean per channel
    (dimension 1 of a convolution's input) or feature (the last dimension
    of a linear layer's: (batch, features) or (batch, sequence, features)).
    The result is one-hot in value; its gradient is the log-softmax's
    (straight-through), so the cost penalty and the loss train the gate."""

    TEMPERATURE = 4.0

    def __init__(self, features, n, channel_dim=1):
        super().__init__()
        self.fc = nn.Linear(features, n)
        self.channel_dim = channel_dim

    def forward(self, x):
        channel = self.channel_dim % x.dim()
        dims = [d for d in range(x.dim()) if d != channel]
        logits = self.fc(x.detach().mean(dim=dims))
        hard = (logits == logits.max()).to(logits.dtype)
        hard = hard / hard.sum()  # (a tie splits evenly)
        # The straight-through gradient is a softened softmax's
        # (temperature TEMPERATURE): at temperature 1 a gate pushed to one
        # option saturates, its gradient vanishes and it never moves back.
        p = F.softmax(logits / self.TEMPERATURE, dim=-1)
        return hard + p - p.detach()


class DFQLayer(nn.Module):
    """A convolution or linear layer under a DFQ gate."""

    def __init__(self, layer, options, name, stochastic_gradients=True):
        super().__init__()
        self.layer, self.name = layer, name
        self.stochastic_gradients = stochastic_gradients
        conv = isinstance(layer, nn.Conv2d)
        self.gate = Gate(layer.in_channels if conv else layer.in_features, len(options),
                         channel_dim=1 if conv else -1)
        self.register_buffer("forward_bits", torch.tensor([float(f) for f, _ in options]))
        self.register_buffer("backward_bits", torch.tensor([float(b) for _, b in options]))
        # (FW, BW) of the last batch: written in the forward, copied back by
        # act.compile after each step.
        self.register_buffer("executed", torch.zeros(2))
        self.macs_per_sample = 0  # set by the forward (static for a layer)
        self.cost = None  # this layer's cost over fp32, differentiable in the gate

    def forward(self, x):
        g = self.gate(x)
        # The chosen option's gate value (1) scales the output: the
        # accuracy loss reaches the gate through it (SkipNet's and
        # FracTrain's Eq. 1 with one option executed).
        chosen = (g * (g.detach() > 0).to(g.dtype)).sum()
        fw = (g * self.forward_bits).sum()
        bw = (g * self.backward_bits).sum()
        executed = torch.round(torch.stack([fw, bw])).detach()
        self.executed.copy_(executed)  # eager PyTorch
        record(self.name, executed)  # act's step: a result (act.export.record)
        layer = self.layer
        w = fake_quantize(layer.weight, fw)
        xq = fake_quantize(x, fw)
        if isinstance(layer, nn.Conv2d):
            y = F.conv2d(xq, w, layer.bias, layer.stride, layer.padding, layer.dilation,
                         layer.groups)
            per_output = layer.in_channels // layer.groups * layer.kernel_size[0] \
                * layer.kernel_size[1]
        else:
            y = F.linear(xq, w, layer.bias)
            per_output = layer.in_features
        self.macs_per_sample = y[0].numel() * per_output
        # Forward: input x weight at FW; backward: grad_out (BW) times the
        # weight and times the input (FW), FracTrain Sec. 4.1.
        self.cost = (fw / 32) * (fw / 32) + 2 * (fw / 32) * (bw / 32)
        return quantize_gradient(y, bw, self.stochastic_gradients) * chosen


def _tracing(t):
    """True for a tensor of act.export's trace (no value to read)."""
    try:
        float(t.detach())
        return False
    except Exception:  # a tracer's proxy tensor
        return True


class DFQ(nn.Module):
    """`model` with every Conv2d and Linear under a DFQ gate, and the cost
    penalty: `loss_fn(loss)` wraps a loss function as Eq. 2's
    loss + beta * cp; `control()` after each step holds cp at
    `target_cost` (a fraction of fp32's cost) by beta's sign."""

    def __init__(self, model, target_cost, options=DEFAULT_OPTIONS, beta=1.0,
                 stochastic_gradients=True):
        super().__init__()
        self.stochastic_gradients = stochastic_gradients
        if not 0 < target_cost <= 1:
            raise ValueError(f"DFQ's target cost is a fraction of fp32's, got {target_cost}")
        if not options:
            raise ValueError("DFQ needs at least one precision option")
        for f, b in options:
            if not (1 <= f <= 16 and 1 <= b <= 16):
                raise ValueError(f"DFQ option FW-{f}/BW-{b}: bits in 1..16")
        self.target_cost, self.options = target_cost, tuple(options)
        self.magnitude = abs(beta)
        self.model = self._wrap(model)
        self.register_buffer("beta", torch.tensor(self.magnitude / target_cost))
        self.layers = [m for m in self.model.modules() if isinstance(m, DFQLayer)]
        if not self.layers:
            raise ValueError("DFQ found no Conv2d or Linear layer to gate")
        self.executed_macs = 0.0  # effective MACs summed over control() calls
        self.fp32_macs = 0.0
        self.history = []  # (cp executed, beta) per step
        self.penalty = 0.0  # beta * cp the last step added to its loss

    def _wrap(self, module, prefix="dfq"):
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            return DFQLayer(module, self.options, prefix, self.stochastic_gradients)
        for name, child in module.named_children():
            setattr(module, name, self._wrap(child, f"{prefix}.{name}"))
        return module

    def forward(self, x):
        return self.model(x)

    def cost(self):
        """cp of the last forward: differentiable in the gates."""
        total = sum(layer.macs_per_sample for layer in self.layers)
        return sum(layer.cost * (layer.macs_per_sample / total) for layer in self.layers) / 3

    def loss_fn(self, loss):
        """Eq. 2 with cp relative to the target (beta * cp / target): the
        penalty's pull does not shrink with the target."""
        def penalized(out, target):
            penalty = self.beta * self.cost()
            self.penalty = float(penalty.detach()) if not _tracing(penalty) else None
            record("dfq.penalty", penalty)  # act's step: the penalty it added
            return loss(out, target) + penalty
        return penalized

    def executed_cost(self, batch):
        """(effective MACs, fp32 MACs) of the last step of `batch` samples
        from the bits the layers recorded (FracTrain Sec. 4.1)."""
        eff = sum(l.macs_per_sample * batch * ((l.executed[0] / 32) ** 2
                                               + 2 * (l.executed[0] / 32) * (l.executed[1] / 32))
                  for l in self.layers)
        return float(eff), float(3 * batch * sum(l.macs_per_sample for l in self.layers))

    def control(self, batch, records=None):
        """After a step of `batch` samples: counts its executed cost and
        sets beta's sign (positive above the target, pushing cp down;
        negative below). `records`: act.compile's `step.records` (the bits
        act's step executed); without, the bits eager PyTorch recorded."""
        for layer in self.layers:
            if records is not None:
                layer.executed.copy_(records[layer.name])
        if records is not None:
            self.penalty = float(records["dfq.penalty"])
        eff, fp32 = self.executed_cost(batch)
        self.executed_macs += eff
        self.fp32_macs += fp32
        cp = eff / fp32
        sign = 1.0 if cp > self.target_cost else -1.0
        self.beta.fill_(sign * self.magnitude / self.target_cost)
        self.history.append((cp, float(self.beta)))
        return cp

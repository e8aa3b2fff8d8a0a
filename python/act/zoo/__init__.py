"""The model zoo: every classification family of Debian's torchvision and
the PyTorch blocks users build models from, through the exporter and act.

    python3 -m act.zoo [NAME ...] [--encodings E;E] [--isolate [--timeout S]] [-o DIR]

Per model: does it export; the gradient error of act's step against float64
autograd with no encoding (the largest per-gradient L2 error divided by the
L2 norm of all gradients together, so that a gradient that is zero in theory
does not read as a failure; bound 1e-4), the same with uniform 4-bit
quantization and with bf16 of every saved activation; saved bytes and the
measured peak without and with 4-bit. Models run at reduced width and
resolution, in training mode; dropout masks come from the step's seed
(Philox, the reference uses the same masks); stochastic depth is traced as
the identity (the manifest counts it).
The names are usable wherever the exporter takes a model (`zoo.NAME`).

The package: `models` (the models by name, ZOO; imported by act.models for
`zoo.NAME`, so it imports nothing of act's) and `run` (the table and the
command line: steps in this process, or in act-run with --isolate).
"""

from .models import BATCH, BOUND, ZOO

__all__ = ["BATCH", "BOUND", "ZOO"]
